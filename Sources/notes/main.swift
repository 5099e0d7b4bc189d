/// notes: the reference app's executable (the app itself is the NotesApp module).
import NotesApp
import SceneWorker

await SceneWorker.run(makeNotesApp())
