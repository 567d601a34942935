#ifndef CPULSE_SHIM_H
#define CPULSE_SHIM_H
// libpulse's asynchronous API: the native PulseAudio output device plays through a threaded
// main loop, a context and one playback stream. Only the types and constants are used from
// here; the functions are looked up with dlsym.
#include <pulse/pulseaudio.h>
#endif
