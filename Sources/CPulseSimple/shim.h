#ifndef CPULSESIMPLE_SHIM_H
#define CPULSESIMPLE_SHIM_H
// libpulse's blocking "simple" API: the acoustic check records the sound server's monitor with
// it, in process, so each recorded block carries the server's own latency figure.
#include <pulse/simple.h>
#include <pulse/error.h>
#endif
