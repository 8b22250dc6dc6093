// The user a job runs as, resolved from its uid through the system's user database (NSS).
#pragma once

#include <sys/types.h>

#include <optional>

#include "common/admission.hpp"

namespace safe {

// nullopt when the uid has no passwd entry.
std::optional<JobUser> lookup_job_user(uid_t uid);

}  // namespace safe
