// CSceneZygote: a scene app's process as its own zygote. Its constructor (zygote.c) runs
// before any other in every program that links the SceneWorker SDK and does nothing unless
// the broker started the program as the app's zygote; the SDK then calls wb_zygote_serve
// first thing in SceneWorker.run.
#ifndef CSCENEZYGOTE_H
#define CSCENEZYGOTE_H

/// 1 when this process was started as its app's zygote and has not served yet.
int wb_zygote_pending(void);

/// In a zygote: says "ready" to the broker and forks a worker for each request, for as long
/// as the broker keeps the channel open (then the zygote exits). Returns 1 in each child,
/// which goes on as an ordinary worker; returns 0 at once in any other process. Call it on
/// the process's only thread: a zygote with a second thread says why and exits.
int wb_zygote_serve(void);

#endif
