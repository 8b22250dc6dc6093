// Strings and arrays handed to slurmctld must come from Slurm's own allocator: slurmctld frees
// them with xfree. (A strdup'ed err_msg crashed slurmctld on the next submission.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include <slurm/slurm.h>
}

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(21, 8, 0)
#error "job_submit_safe needs Slurm 21.08 or later (xmalloc interface)"
#endif

extern "C" {
char* slurm_xstrdup(const char* str);
void slurm_xfree(void** item);
void* slurm_xcalloc(size_t count, size_t size, bool clear, bool try_, const char* file, int line, const char* func);
}

namespace safe::slurm {

inline char* xstrdup(const std::string& s) { return slurm_xstrdup(s.c_str()); }

// Replaces a char* field of a Slurm struct, freeing the old value with Slurm's allocator.
inline void replace_string(char*& field, const std::string& value) {
  char* old = field;
  field = xstrdup(value);
  if (old) slurm_xfree(reinterpret_cast<void**>(&old));
}

// Replaces a char** array field (e.g. spank_job_env) and its element count.
inline void replace_string_array(char**& array, uint32_t& size, const std::vector<std::string>& values) {
  char** fresh = static_cast<char**>(
      slurm_xcalloc(values.size() + 1, sizeof(char*), true, false, __FILE__, __LINE__, __func__));
  for (std::size_t i = 0; i < values.size(); ++i) fresh[i] = xstrdup(values[i]);
  for (uint32_t i = 0; array && i < size; ++i)
    if (array[i]) slurm_xfree(reinterpret_cast<void**>(&array[i]));
  if (array) slurm_xfree(reinterpret_cast<void**>(&array));
  array = fresh;
  size = static_cast<uint32_t>(values.size());
}

}  // namespace safe::slurm
