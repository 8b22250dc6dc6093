// A node's state and reason as `scontrol show node -o NAME` prints them, for the node programs
// (node_control.hpp), which read Slurm through scontrol rather than libslurm so that a stuck
// slurmctld costs them a timeout, never a hang; and the reason prefixes that say who owns a drain.
// The daemons read the same node as a SlurmNode (model.hpp) through libslurm.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace safe {

// Reasons SaFE's node checks write start with this; only those may SaFE resume.
inline constexpr std::string_view kOwnReasonPrefix = "SaFE:";
// Reserved for the controller's quarantine of lemon nodes: the node checks never touch these.
inline constexpr std::string_view kQuarantineReasonPrefix = "SaFE-quarantine:";
// Slurm keeps any length, but sinfo's default column and admins' screens do not.
inline constexpr std::size_t kMaxReasonLength = 80;

struct NodeStatus {
  std::string name;
  std::string state;   // e.g. "IDLE+DRAIN", "MIXED", "DOWN*+DRAIN"
  std::string reason;  // without the " [user@time]" suffix; empty when none
  std::string version;  // its slurmd's Slurm release (Version=); empty before slurmd registered

  bool has_flag(std::string_view flag) const;  // a "+"-separated part of state, or its base
  bool drained() const;                        // DRAIN flag (draining or drained)
  bool idle() const;                           // no job on the node
};

// nullopt when the output names no node (e.g. "Node n9 not found").
std::optional<NodeStatus> parse_scontrol_show_node(std::string_view output);

bool is_own_reason(std::string_view reason);
bool is_quarantine_reason(std::string_view reason);
// "SaFE: " + detail, one line, at most kMaxReasonLength characters.
std::string own_reason(std::string_view detail);

}  // namespace safe
