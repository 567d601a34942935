#ifndef CSOUNDTOUCH_SHIM_H
#define CSOUNDTOUCH_SHIM_H
// SoundTouch's C interface (libSoundTouchDll, from libsoundtouch-dev). There is no pkg-config
// file for it: soundtouch.pc names the C++ library and its include folder, while the C header
// sits in /usr/include and the C wrapper library is linked by name in the module map.
#include <SoundTouchDLL.h>

// The setting identifiers of soundtouch_setSetting / soundtouch_getSetting. SoundTouchDLL.h
// does not declare them: they are the SETTING_… macros of the C++ header SoundTouch.h
// (SoundTouch 2.3), repeated here under the module's prefix.
enum {
    CSOUNDTOUCH_SETTING_USE_AA_FILTER = 0,
    CSOUNDTOUCH_SETTING_AA_FILTER_LENGTH = 1,
    CSOUNDTOUCH_SETTING_USE_QUICKSEEK = 2,
    CSOUNDTOUCH_SETTING_SEQUENCE_MS = 3,
    CSOUNDTOUCH_SETTING_SEEKWINDOW_MS = 4,
    CSOUNDTOUCH_SETTING_OVERLAP_MS = 5,
    CSOUNDTOUCH_SETTING_NOMINAL_INPUT_SEQUENCE = 6,
    CSOUNDTOUCH_SETTING_NOMINAL_OUTPUT_SEQUENCE = 7,
    CSOUNDTOUCH_SETTING_INITIAL_LATENCY = 8,
};

#endif
