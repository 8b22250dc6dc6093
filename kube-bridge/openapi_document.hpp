// The OpenAPI 3.0 description of the REST API (docs/openapi.json, compiled in at build time).
#pragma once

#include <string>

namespace safe::bridge {
const std::string& openapi_document();
}
