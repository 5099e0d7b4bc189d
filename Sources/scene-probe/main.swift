/// scene-probe: the tests' app. It runs the reference app (notes) unchanged inside a probe
/// that sees every callback the SDK makes and adds the actions only a test needs: the
/// callbacks received so far (`state`), a scene that hangs, crashes, exits, floods the broker,
/// holds memory, or pokes the SDK's requests directly. The harness installs it under the app
/// id `notes` with these actions declared beside notes' own (`actions.json`); it is never
/// installed for users.
import Foundation
import NotesApp
import SceneWorker

// An app whose own start runs a thread before the SDK's (what an app's zygote must refuse to
// fork: the thread would be missing in every child).
if getenv("SCENE_PROBE_THREAD_BEFORE_RUN") != nil {
    Thread.detachNewThread { while true { sleep(60) } }
}
await SceneWorker.run(ProbeAppDelegate(wrapping: makeNotesApp()))
