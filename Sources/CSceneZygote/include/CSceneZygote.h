// CSceneZygote: a scene app's process as its own zygote. Nothing to call: its constructor
// (zygote.c) runs before any other in every program that links the SceneWorker SDK, and
// returns at once unless the broker started the program as the app's zygote.
#ifndef CSCENEZYGOTE_H
#define CSCENEZYGOTE_H
#endif
