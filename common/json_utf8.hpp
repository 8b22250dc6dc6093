// Text from Slurm, users and GPU libraries (job names, process names, reasons) is bytes, not
// necessarily UTF-8; jansson refuses invalid UTF-8 (json_string returns NULL, and the key then
// silently vanishes from the document). Every string SaFE puts into JSON goes through here:
// invalid sequences become U+FFFD, so a field is never dropped.
#pragma once

#include <jansson.h>

#include <string>
#include <string_view>

namespace safe {

// `text` with each invalid UTF-8 sequence (overlong forms, surrogates, > U+10FFFF, truncated)
// replaced by U+FFFD. Valid text is returned unchanged.
std::string valid_utf8(std::string_view text);

// A new JSON string holding valid_utf8(text); never NULL (except when out of memory).
json_t* json_utf8(std::string_view text);

}  // namespace safe
