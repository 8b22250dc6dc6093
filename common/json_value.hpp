// Owning handles and small readers and writers for jansson values, so that no json_t* leaks on an
// early return. Every json_t* SaFE owns is held by a Json.
#pragma once

#include <jansson.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/json_utf8.hpp"

namespace safe {

struct JsonDecref {
  void operator()(json_t* j) const { json_decref(j); }
};
using Json = std::unique_ptr<json_t, JsonDecref>;

inline Json json_take(json_t* j) { return Json(j); }

// Serialisation with jansson's `flags`; `fallback` if `j` cannot be serialised (jansson only
// refuses NaN).
inline std::string json_dump(const json_t* j, std::size_t flags, std::string fallback = "") {
  char* s = json_dumps(j, flags);
  if (!s) return fallback;
  std::string out(s);
  free(s);
  return out;
}

// Compact serialisation ("" if `j` cannot be serialised).
inline std::string json_text(const json_t* j) { return json_dump(j, JSON_COMPACT | JSON_ENSURE_ASCII); }

// A document written to a file for people and programs alike: indented, ending in a newline.
inline std::string json_document(const json_t* j, std::size_t flags) { return json_dump(j, flags, "{}") + "\n"; }

inline void json_set(json_t* object, const char* key, json_t* value) { json_object_set_new(object, key, value); }
// Any bytes: invalid UTF-8 becomes U+FFFD rather than a missing field.
inline json_t* json_str(std::string_view s) { return json_utf8(s); }

inline std::string json_string_or(const json_t* object, const char* key, std::string fallback = "") {
  const json_t* v = json_object_get(object, key);
  return json_is_string(v) ? std::string(json_string_value(v), json_string_length(v)) : fallback;
}

}  // namespace safe
