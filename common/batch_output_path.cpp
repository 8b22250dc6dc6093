#include "common/batch_output_path.hpp"

#include <cctype>
#include <cstdio>

namespace safe {
namespace {

constexpr std::uint32_t kNoVal = 0xfffffffe;
constexpr unsigned kMaxWidth = 10;

std::string padded(unsigned long long value, unsigned width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llu", static_cast<int>(width), value);
  return buf;
}

std::string with_work_dir(const std::string& work_dir, bool add_slash) {
  std::string base = work_dir;
  if (add_slash && (base.empty() || base.back() != '/')) base += '/';
  return base;
}

// fname.c (22.05): _create_batch_fname with _batch_path_check; remove_path_slashes for '\'.
std::string expand_slurmd_fname(std::string_view p, const BatchOutputContext& c) {
  // Any backslash turns expansion off: "\\" becomes '\', a single '\' is dropped.
  if (p.find('\\') != std::string_view::npos) {
    std::string unescaped;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p[i] == '\\' && i + 1 < p.size() && p[i + 1] == '\\') {
        unescaped += '\\';
        ++i;
      } else if (p[i] != '\\') {
        unescaped += p[i];
      }
    }
    // Slurm's own quirk: no '/' between the working directory and an escaped relative name.
    return p[0] == '/' ? unescaped : with_work_dir(c.work_dir, false) + unescaped;
  }
  std::string out = p[0] == '/' ? "" : with_work_dir(c.work_dir, true);
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '%') {
      out += p[i];
      continue;
    }
    if (i + 1 < p.size() && p[i + 1] == '%') {
      out += '%';
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    unsigned width = 0;
    bool had_width = false;
    if (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) {
      unsigned long long w = 0;
      while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) w = w * 10 + (p[j++] - '0'), w = w > 99 ? 99 : w;
      width = w > kMaxWidth ? kMaxWidth : static_cast<unsigned>(w);
      had_width = true;
      if (j == p.size()) {  // "%15" at the end: Slurm keeps only the last digit
        out += p[j - 1];
        return out;
      }
    }
    if (j == p.size()) {  // a lone '%' at the end is kept
      out += '%';
      break;
    }
    char f = p[j];
    std::string value;
    bool known = true;
    switch (f) {
      case 'a': value = padded(c.array_task_id, width); break;
      case 'A': value = padded(c.array_task_id == kNoVal ? c.job_id : c.array_job_id, width); break;
      case 'J': case 'j': value = padded(c.job_id, width); break;  // the batch step: no ".step"
      case 'n': case 't': value = padded(0, width); break;          // node 0, task 0
      case 'N': value = c.batch_host_short; break;
      case 's': value = "batch"; break;
      case 'u': value = c.user_name; break;
      case 'x': value = c.job_name; break;
      default: known = false; break;
    }
    if (known) {
      out += value;
      i = j;
    } else if (had_width) {
      // Not a pattern: Slurm keeps the last digit of the width and the letter ("%10z" -> "0z").
      out += p[j - 1];
      out += f;
      i = j;
    } else {
      out += '%';  // and the letter comes next, as written
    }
  }
  return out;
}

// print_fields.c (24.11 on): expand_stdio_fields for a batch step.
std::string expand_stdio_fields(std::string_view p, const BatchOutputContext& c) {
  std::string out = p[0] == '/' ? "" : with_work_dir(c.work_dir, true);
  if (p.find('\\') != std::string_view::npos) {
    for (char ch : p)
      if (ch != '\\') out += ch;
    return out;
  }
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '%') {
      out += p[i];
      continue;
    }
    if (i + 1 == p.size()) break;  // a lone '%' at the end is dropped
    if (p[i + 1] == '%') {
      out += '%';
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    unsigned width = 0;
    if (std::isdigit(static_cast<unsigned char>(p[j]))) {
      unsigned long long w = 0;
      while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) w = w * 10 + (p[j++] - '0'), w = w > 99 ? 99 : w;
      width = w > 9 ? kMaxWidth : static_cast<unsigned>(w);
      if (j == p.size()) {  // Slurm reads past the end here; keep what was written
        out += std::string(p.substr(i));
        return out;
      }
    }
    char f = p[j];
    std::string value;
    bool known = true;
    switch (f) {
      case 'A': value = padded(c.array_job_id ? c.array_job_id : c.job_id, width); break;
      case 'a': value = padded(c.array_task_id, width); break;
      case 'b': value = padded(c.array_task_id % 10, width); break;
      case 'J': case 'j': value = padded(c.job_id, width); break;
      case 'r': value = padded(static_cast<unsigned long long>(c.restart_count), width); break;
      case 's': value = "batch"; break;
      case 'n': case 't': value = padded(0, width); break;
      case 'N': value = c.batch_node; break;
      case 'u': value = c.user_name; break;
      case 'x': value = c.job_name; break;
      default: known = false; break;  // %S (SLUID) included: safed cannot know it
    }
    if (known) out += value;
    else out += std::string(p.substr(i, j - i + 1));  // kept as written, '%' and width included
    i = j;
  }
  return out;
}

bool is_number(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s)
    if (!std::isdigit(static_cast<unsigned char>(ch))) return false;
  return true;
}

}  // namespace

std::string batch_output_path(std::string_view pattern, const BatchOutputContext& c, OutputPatternDialect dialect) {
  std::string fallback;
  if (pattern.empty()) {
    fallback = c.array_task_id == kNoVal ? "slurm-%J.out" : "slurm-%A_%a.out";
    pattern = fallback;
  }
  // "-o 3": only task 3 writes output; the batch step is task 0 and writes to /dev/null.
  if (is_number(pattern)) {
    unsigned long task = 0;
    for (char ch : pattern) task = task > 100000000 ? task : task * 10 + (ch - '0');
    if (task != 0) return "";
  }
  return dialect == OutputPatternDialect::slurmd_fname ? expand_slurmd_fname(pattern, c) : expand_stdio_fields(pattern, c);
}

}  // namespace safe
