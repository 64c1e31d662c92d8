// libjpeg's two public headers, in the one order that works. jerror.h numbers its messages (the
// JWRN_ and JERR_ codes a warning carries in msg_code) by JPEG_LIB_VERSION, which jpeglib.h
// defines: included first, it numbers them as the jpeg62 ABI does, and against a jpeg8 libjpeg
// (Ubuntu's libjpeg-turbo8, the image's) every code from JERR_BAD_CROP_SPEC on is off by up to
// two, so libjpeg's "Premature end of JPEG file" is read as another warning and the warnings this
// code raises print as others (found by the oldest-platform build, tests/oldest_build). Include
// this header, never <jerror.h> itself.
#pragma once

#include <cstdio>  // jpeglib.h needs FILE

#include <jpeglib.h>

#include <jerror.h>  // after jpeglib.h: see above
