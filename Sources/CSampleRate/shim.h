#ifndef CSAMPLERATE_SHIM_H
#define CSAMPLERATE_SHIM_H
#include <samplerate.h>
#endif
