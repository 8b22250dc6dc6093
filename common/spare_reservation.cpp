#include "common/spare_reservation.hpp"

#include <cctype>

namespace safe {

std::string named_spare_reservation(std::string_view reservations) {
  while (!reservations.empty()) {
    std::size_t comma = reservations.find(',');
    std::string_view name = reservations.substr(0, comma);
    // Without regard to case: stricter than slurmctld (xstrcmp), never looser.
    bool match = name.size() >= kSpareReservationPrefix.size();
    for (std::size_t i = 0; match && i < kSpareReservationPrefix.size(); ++i)
      match = std::tolower(static_cast<unsigned char>(name[i])) == kSpareReservationPrefix[i];
    if (match) return std::string(name);
    if (comma == std::string_view::npos) break;
    reservations.remove_prefix(comma + 1);
  }
  return "";
}

std::string spare_reservation_refusal(const std::string& name) {
  return "safe: reservation " + name +
         " holds SaFE's hot spare nodes, which safed alone gives to failing-over SaFE jobs (they get one "
         "automatically); submit or update the job without it";
}

}  // namespace safe
