// The Slurm reservations that hold SaFE's hot spares (failover.spares): one per partition, named
// safe_spares_PARTITION. safed alone places jobs into them; the job_submit plugin refuses any
// user's job or update that names one (docs/security.md).
#pragma once

#include <string>
#include <string_view>

namespace safe {

inline constexpr std::string_view kSpareReservationPrefix = "safe_spares_";

inline std::string spare_reservation_name(std::string_view partition) {
  return std::string(kSpareReservationPrefix) + std::string(partition);
}

// The first spare reservation a job's reservation request names ("" when none): Slurm takes a
// comma-separated list (any one of them) from 22.05 on.
std::string named_spare_reservation(std::string_view reservations);

// What job_submit answers a job or update that names spare reservation `name`.
std::string spare_reservation_refusal(const std::string& name);

}  // namespace safe
