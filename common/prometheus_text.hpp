// Prometheus's text exposition format: a label value as it must be written between the quotes.
#pragma once

#include <string>
#include <string_view>

namespace safe {

// Backslash, double quote and newline escaped (node, job and workspace names come from admins
// and users: a quote in one must not end the label and forge another series).
std::string prometheus_label_value(std::string_view value);

}  // namespace safe
