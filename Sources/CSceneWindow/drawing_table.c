// The drawing library's one entry point: the table of its functions, which the programs'
// forwarders (CSceneWindowLoader) call through after loading this library with dlopen.
#include "drawing_library.h"
#include "wayland_common.h"

__attribute__((visibility("default"))) const wb_drawing_table *WB_DRAWING_TABLE_SYMBOL(void) {
    static const wb_drawing_table table = {
        .ss_open = ss_open,
        .ss_fd = ss_fd,
        .ss_dispatch = ss_dispatch,
        .ss_close = ss_close,
        .ss_picture_from_png = ss_picture_from_png,
        .ss_picture_free = ss_picture_free,
        .ss_draw_cards = ss_draw_cards,
        .ss_item_at = ss_item_at,
        .ss_item_frame = ss_item_frame,
        .ss_draw_rows = ss_draw_rows,
        .sw_prepare_fonts = sw_prepare_fonts,
    };
    return &table;
}
