// libsystemd, as the broker uses it: sd_notify, sd_listen_fds_with_names, sd_watchdog_enabled,
// sd_journal_sendv. The broker adds CODE_FILE/CODE_LINE itself (from swift-log), so the
// location-adding macro around sd_journal_sendv is switched off.
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <sys/uio.h>
