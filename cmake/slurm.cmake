# The Slurm SaFE builds against: its headers, libslurm, PluginDir, programs and version.
#
# Found, in this order, from
#   -DSAFE_SLURM_PREFIX=/opt/slurm/26.05.3   a Slurm installed under a prefix (make install);
#   pkg-config's slurm module                 a Slurm whose slurm.pc is on PKG_CONFIG_PATH;
#   the system                                Debian's libslurm-dev and slurm-wlm (/usr).
# Sets SAFE_SLURM_VERSION (e.g. 26.05.3), SAFE_SLURM_PLUGIN_DIR, SAFE_SLURM_BIN_DIR,
# SAFE_SLURM_SBIN_DIR, and the target safe_slurm_headers (include path; the plugins get libslurm's
# symbols from the Slurm program that loads them) and SAFE_SLURM_LIBRARY (libslurm, for clients).

# What SaFE is built and tested against (docs/admin-guide.md, "Slurm releases").
set(SAFE_SLURM_MIN_VERSION 22.05)
set(SAFE_SLURM_MAX_VERSION 26.05)

set(SAFE_SLURM_PREFIX "" CACHE PATH "A Slurm installation prefix to build against (default: pkg-config, then /usr)")
# What was found for another prefix in this build tree is looked for again.
if(DEFINED SAFE_SLURM_FOUND_FOR AND NOT SAFE_SLURM_FOUND_FOR STREQUAL SAFE_SLURM_PREFIX)
  unset(SAFE_SLURM_LIBRARY CACHE)
  unset(SAFE_SLURM_PLUGIN_PROBE CACHE)
  unset(SAFE_SLURM_PLUGIN_DIR CACHE)
endif()
set(SAFE_SLURM_FOUND_FOR "${SAFE_SLURM_PREFIX}" CACHE INTERNAL "The SAFE_SLURM_PREFIX the Slurm paths were found for")

if(SAFE_SLURM_PREFIX)
  set(_slurm_include "${SAFE_SLURM_PREFIX}/include")
  find_library(SAFE_SLURM_LIBRARY slurm PATHS "${SAFE_SLURM_PREFIX}/lib" "${SAFE_SLURM_PREFIX}/lib64" NO_DEFAULT_PATH)
  set(_slurm_plugin_hints "${SAFE_SLURM_PREFIX}/lib/slurm" "${SAFE_SLURM_PREFIX}/lib64/slurm")
  set(_slurm_bin "${SAFE_SLURM_PREFIX}/bin")
  set(_slurm_sbin "${SAFE_SLURM_PREFIX}/sbin")
else()
  pkg_check_modules(SLURM_PC QUIET slurm)
  if(SLURM_PC_FOUND AND NOT SLURM_PC_PREFIX STREQUAL "/usr")
    set(_slurm_include "${SLURM_PC_INCLUDEDIR}")
    find_library(SAFE_SLURM_LIBRARY slurm PATHS ${SLURM_PC_LIBRARY_DIRS} NO_DEFAULT_PATH)
    set(_slurm_plugin_hints "${SLURM_PC_LIBDIR}/slurm")
    set(_slurm_bin "${SLURM_PC_PREFIX}/bin")
    set(_slurm_sbin "${SLURM_PC_PREFIX}/sbin")
  else()
    set(_slurm_include "/usr/include")
    find_library(SAFE_SLURM_LIBRARY slurm)
    # Debian puts plugins beside libslurmfull.so.
    set(_slurm_plugin_hints /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib64/slurm /usr/lib/slurm /usr/local/lib/slurm)
    set(_slurm_bin /usr/bin)
    set(_slurm_sbin /usr/sbin)
  endif()
endif()

if(NOT EXISTS "${_slurm_include}/slurm/slurm_version.h" OR NOT SAFE_SLURM_LIBRARY)
  message(FATAL_ERROR
    "No Slurm to build against (looked for ${_slurm_include}/slurm/slurm_version.h and libslurm). "
    "Install Debian's libslurm-dev (./bootstrap.sh deps), or point -DSAFE_SLURM_PREFIX at a Slurm "
    "installation prefix.")
endif()

# The version, from slurm_version.h: SLURM_VERSION_NUMBER 0x1a0503 is 26.05.3 (every release has
# it; Debian's header has no SLURM_VERSION_STRING).
file(STRINGS "${_slurm_include}/slurm/slurm_version.h" _slurm_version_line REGEX "^#define SLURM_VERSION_NUMBER ")
string(REGEX MATCH "0x([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])" _match "${_slurm_version_line}")
if(NOT _match)
  message(FATAL_ERROR "Cannot read Slurm's version (SLURM_VERSION_NUMBER) from ${_slurm_include}/slurm/slurm_version.h")
endif()
math(EXPR _major "0x${CMAKE_MATCH_1}")
math(EXPR _minor "0x${CMAKE_MATCH_2}")
math(EXPR _micro "0x${CMAKE_MATCH_3}")
if(_minor LESS 10)
  set(_minor "0${_minor}")
endif()
set(SAFE_SLURM_VERSION "${_major}.${_minor}.${_micro}")
set(_slurm_release "${_major}.${_minor}")
if(_slurm_release VERSION_LESS SAFE_SLURM_MIN_VERSION OR _slurm_release VERSION_GREATER SAFE_SLURM_MAX_VERSION)
  message(FATAL_ERROR
    "Slurm ${SAFE_SLURM_VERSION} (${_slurm_include}) is not supported: SaFE builds against Slurm "
    "${SAFE_SLURM_MIN_VERSION} to ${SAFE_SLURM_MAX_VERSION}. Point -DSAFE_SLURM_PREFIX at a "
    "supported Slurm installation.")
endif()

# PluginDir: where this Slurm's own plugins are.
find_file(SAFE_SLURM_PLUGIN_PROBE select_cons_tres.so PATHS ${_slurm_plugin_hints} NO_DEFAULT_PATH)
if(SAFE_SLURM_PLUGIN_PROBE)
  get_filename_component(_plugdir "${SAFE_SLURM_PLUGIN_PROBE}" DIRECTORY)
else()
  list(GET _slurm_plugin_hints 0 _plugdir)
endif()
set(SAFE_SLURM_PLUGIN_DIR "${_plugdir}" CACHE PATH "Where Slurm loads plugins from (PluginDir)")
set(SAFE_SLURM_BIN_DIR "${_slurm_bin}")
set(SAFE_SLURM_SBIN_DIR "${_slurm_sbin}")

add_library(safe_slurm_headers INTERFACE)
if(NOT _slurm_include STREQUAL "/usr/include")
  target_include_directories(safe_slurm_headers SYSTEM INTERFACE "${_slurm_include}")
endif()
message(STATUS "Slurm ${SAFE_SLURM_VERSION}: ${_slurm_include}, ${SAFE_SLURM_LIBRARY}, PluginDir ${SAFE_SLURM_PLUGIN_DIR}")
