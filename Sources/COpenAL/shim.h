#ifndef COPENAL_SHIM_H
#define COPENAL_SHIM_H
// Extension prototypes (alcLoopbackOpenDeviceSOFT, alGetSourcedvSOFT, …) are declared only
// when this is defined before the headers.
#define AL_ALEXT_PROTOTYPES
#include <AL/al.h>
#include <AL/alc.h>
#include <AL/alext.h>
#endif
