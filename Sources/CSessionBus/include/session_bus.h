// The broker's face on the D-Bus session bus, as a thin layer over sd-bus: the vtables (which
// are C macros), the variadic calls Swift cannot make, and the sender check. Everything else
// (which sessions exist, what their properties are, what a method does) is the Swift side's,
// reached through the callbacks in `wb_bus_callbacks`. Every function here runs on the one
// thread that owns the bus.
#ifndef WB_SESSION_BUS_H
#define WB_SESSION_BUS_H

#include <stdint.h>
#include <systemd/sd-bus.h>

#define WB_BUS_NAME "org.windowbroker.Broker1"
#define WB_BUS_PATH "/org/windowbroker/Broker1"
#define WB_BUS_SESSIONS "/org/windowbroker/Broker1/session"
#define WB_BUS_BROKER_INTERFACE "org.windowbroker.Broker1"
#define WB_BUS_SESSION_INTERFACE "org.windowbroker.Session1"

typedef struct wb_bus_callbacks {
    void *context;
    /// A method call from an allowed sender: the Swift side takes a reference and replies
    /// later (`wb_bus_reply_*`). Returns 1, or a negative errno.
    int (*method)(void *context, sd_bus_message *call, const char *path, const char *member);
    /// Appends one property's value (of the vtable's type) to `reply`. Returns >= 0 or a negative errno.
    int (*property)(void *context, sd_bus_message *reply, const char *path, const char *property);
    /// 1 when an object exists at `path` (a session), else 0.
    int (*exists)(void *context, const char *path);
    /// The session objects' paths, as a NULL-terminated array the caller frees (strv).
    char **(*enumerate)(void *context);
} wb_bus_callbacks;

/// An eventfd (non-blocking, close-on-exec) the bus thread polls beside the bus: how other
/// threads wake it. Returns the descriptor or -1.
int wb_bus_wakeup_fd(void);

/// Connects to the session bus at `address` (NULL: $DBUS_SESSION_BUS_ADDRESS, else
/// $XDG_RUNTIME_DIR/bus). Returns >= 0 or a negative errno.
int wb_bus_open(sd_bus **bus, const char *address);
/// Exports the broker object, the session objects and an object manager, then takes the
/// well-known name. `callbacks` must outlive the bus. Returns >= 0 or a negative errno
/// (-EEXIST: another process owns the name).
int wb_bus_export(sd_bus *bus, wb_bus_callbacks *callbacks);

int wb_bus_read_string(sd_bus_message *message, const char **value);
/// An a{ss} argument: enter it, read its pairs until 0 (the end), exit it.
int wb_bus_enter_string_dictionary(sd_bus_message *message);
int wb_bus_read_string_pair(sd_bus_message *message, const char **key, const char **value);
int wb_bus_exit_container(sd_bus_message *message);
/// The user the bus daemon runs as (the peer of the connection), or a negative errno.
int wb_bus_owner_uid(sd_bus *bus, uid_t *uid);
/// The process id of a call's sender, as the bus reports it; 0 when it cannot be told.
int wb_bus_sender_pid(sd_bus_message *message);
int wb_bus_reply_empty(sd_bus_message *call);
int wb_bus_reply_object(sd_bus_message *call, const char *path);
int wb_bus_reply_error(sd_bus_message *call, const char *name, const char *text);

int wb_bus_append_string(sd_bus_message *message, const char *value);
int wb_bus_append_bool(sd_bus_message *message, int value);
int wb_bus_append_uint32(sd_bus_message *message, uint32_t value);
int wb_bus_append_object(sd_bus_message *message, const char *path);

/// PropertiesChanged for one property of a session object, or of the broker object.
int wb_bus_emit_changed(sd_bus *bus, const char *path, const char *interface, const char *property);
/// The broker's `Event` signal: what `wmctl watch` shows.
int wb_bus_emit_event(sd_bus *bus, const char *session_path, const char *event, const char *detail);
/// InterfacesAdded / InterfacesRemoved for a session object.
int wb_bus_emit_added(sd_bus *bus, const char *path);
int wb_bus_emit_removed(sd_bus *bus, const char *path);

#endif
