#include "session_bus.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/// The same rule as the control socket: only the broker's own user. A session bus may let
/// anyone connect (its socket's permissions decide), so each call's sender is checked.
static int sender_allowed(sd_bus_message *message, sd_bus_error *error) {
    sd_bus_creds *creds = NULL;
    uid_t uid;
    int r = sd_bus_query_sender_creds(message, SD_BUS_CREDS_EUID, &creds);
    if (r >= 0) r = sd_bus_creds_get_euid(creds, &uid);
    sd_bus_creds_unref(creds);
    if (r < 0) return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, "the caller's user could not be told; only the broker's own user may use it");
    if (uid != geteuid()) return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "only uid %u may use the broker (the caller is uid %u)", (unsigned)geteuid(), (unsigned)uid);
    return 1;
}

static int on_method(sd_bus_message *call, void *userdata, sd_bus_error *error) {
    wb_bus_callbacks *callbacks = userdata;
    int r = sender_allowed(call, error);
    if (r < 0) return r;
    return callbacks->method(callbacks->context, call, sd_bus_message_get_path(call), sd_bus_message_get_member(call));
}

static int on_property(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    wb_bus_callbacks *callbacks = userdata;
    sd_bus_message *current = sd_bus_get_current_message(bus);
    if (current) {
        int r = sender_allowed(current, error);
        if (r < 0) return r;
    }
    return callbacks->property(callbacks->context, reply, path, property);
}

static int on_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found, sd_bus_error *error) {
    wb_bus_callbacks *callbacks = userdata;
    if (!callbacks->exists(callbacks->context, path)) return 0;
    *found = userdata;
    return 1;
}

static int on_enumerate(sd_bus *bus, const char *prefix, void *userdata, char ***nodes, sd_bus_error *error) {
    wb_bus_callbacks *callbacks = userdata;
    *nodes = callbacks->enumerate(callbacks->context);
    return *nodes ? 0 : -ENOMEM;
}

static const sd_bus_vtable broker_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD_WITH_ARGS("Open", SD_BUS_ARGS("s", app), SD_BUS_RESULT("o", session), on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_ARGS("OpenActivity", SD_BUS_ARGS("s", app, "s", activity_type, "s", title, "a{ss}", user_info),
                            SD_BUS_RESULT("o", session), on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_PROPERTY("Version", "s", on_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("KeySession", "o", on_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_SIGNAL_WITH_ARGS("Event", SD_BUS_ARGS("o", session, "s", event, "s", detail), 0),
    SD_BUS_VTABLE_END,
};

static const sd_bus_vtable session_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("Activate", "", "", on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("Background", "", "", on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("Reclaim", "", "", on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("Close", "", "", on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_PROPERTY("Id", "s", on_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("AppId", "s", on_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Title", "s", on_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("State", "s", on_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("IsKey", "b", on_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Pid", "u", on_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("HasSnapshot", "b", on_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_VTABLE_END,
};

int wb_bus_wakeup_fd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int wb_bus_open(sd_bus **bus, const char *address) {
    if (!address) return sd_bus_open_user(bus);
    int r = sd_bus_new(bus);
    if (r < 0) return r;
    r = sd_bus_set_address(*bus, address);
    if (r >= 0) r = sd_bus_set_bus_client(*bus, 1);
    if (r >= 0) r = sd_bus_start(*bus);
    if (r < 0) *bus = sd_bus_unref(*bus);
    return r;
}

int wb_bus_export(sd_bus *bus, wb_bus_callbacks *callbacks) {
    int r = sd_bus_add_object_vtable(bus, NULL, WB_BUS_PATH, WB_BUS_BROKER_INTERFACE, broker_vtable, callbacks);
    if (r < 0) return r;
    r = sd_bus_add_fallback_vtable(bus, NULL, WB_BUS_SESSIONS, WB_BUS_SESSION_INTERFACE, session_vtable, on_find, callbacks);
    if (r < 0) return r;
    r = sd_bus_add_node_enumerator(bus, NULL, WB_BUS_SESSIONS, on_enumerate, callbacks);
    if (r < 0) return r;
    r = sd_bus_add_object_manager(bus, NULL, WB_BUS_PATH);
    if (r < 0) return r;
    return sd_bus_request_name(bus, WB_BUS_NAME, 0);
}

int wb_bus_owner_uid(sd_bus *bus, uid_t *uid) {
    sd_bus_creds *creds = NULL;
    int r = sd_bus_get_owner_creds(bus, SD_BUS_CREDS_EUID, &creds);
    if (r >= 0) r = sd_bus_creds_get_euid(creds, uid);
    sd_bus_creds_unref(creds);
    return r;
}

int wb_bus_sender_pid(sd_bus_message *message) {
    sd_bus_creds *creds = NULL;
    pid_t pid = 0;
    int r = sd_bus_query_sender_creds(message, SD_BUS_CREDS_PID, &creds);
    if (r >= 0 && sd_bus_creds_get_pid(creds, &pid) < 0) pid = 0;
    sd_bus_creds_unref(creds);
    return r < 0 ? 0 : (int)pid;
}

int wb_bus_read_string(sd_bus_message *message, const char **value) {
    return sd_bus_message_read(message, "s", value);
}

int wb_bus_enter_string_dictionary(sd_bus_message *message) {
    return sd_bus_message_enter_container(message, 'a', "{ss}");
}

int wb_bus_read_string_pair(sd_bus_message *message, const char **key, const char **value) {
    return sd_bus_message_read(message, "{ss}", key, value);
}

int wb_bus_exit_container(sd_bus_message *message) {
    return sd_bus_message_exit_container(message);
}

int wb_bus_reply_empty(sd_bus_message *call) {
    return sd_bus_reply_method_return(call, "");
}

int wb_bus_reply_object(sd_bus_message *call, const char *path) {
    return sd_bus_reply_method_return(call, "o", path);
}

int wb_bus_reply_error(sd_bus_message *call, const char *name, const char *text) {
    return sd_bus_reply_method_errorf(call, name, "%s", text);
}

int wb_bus_append_string(sd_bus_message *message, const char *value) {
    return sd_bus_message_append(message, "s", value);
}

int wb_bus_append_bool(sd_bus_message *message, int value) {
    return sd_bus_message_append(message, "b", value);
}

int wb_bus_append_uint32(sd_bus_message *message, uint32_t value) {
    return sd_bus_message_append(message, "u", value);
}

int wb_bus_append_object(sd_bus_message *message, const char *path) {
    return sd_bus_message_append(message, "o", path);
}

int wb_bus_emit_changed(sd_bus *bus, const char *path, const char *interface, const char *property) {
    char *names[] = {(char *)property, NULL};
    return sd_bus_emit_properties_changed_strv(bus, path, interface, names);
}

int wb_bus_emit_event(sd_bus *bus, const char *session_path, const char *event, const char *detail) {
    return sd_bus_emit_signal(bus, WB_BUS_PATH, WB_BUS_BROKER_INTERFACE, "Event", "oss", session_path, event, detail);
}

int wb_bus_emit_added(sd_bus *bus, const char *path) {
    return sd_bus_emit_object_added(bus, path);
}

int wb_bus_emit_removed(sd_bus *bus, const char *path) {
    return sd_bus_emit_object_removed(bus, path);
}
