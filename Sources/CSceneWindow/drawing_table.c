// The drawing library's one entry point: the table of its functions, which the programs'
// forwarders (CSceneWindowLoader) call through after loading this library with dlopen.
#include "drawing_library.h"
#include "wayland_common.h"

__attribute__((visibility("default"))) const wb_drawing_table *WB_DRAWING_TABLE_SYMBOL(void) {
    static const wb_drawing_table table = {
        .sw_open = sw_open,
        .sw_fd = sw_fd,
        .sw_dispatch = sw_dispatch,
        .sw_set_title = sw_set_title,
        .sw_render = sw_render,
        .sw_width = sw_width,
        .sw_height = sw_height,
        .sw_activate = sw_activate,
        .sw_start_drag = sw_start_drag,
        .sw_text_index_at = sw_text_index_at,
        .sw_snapshot_png = sw_snapshot_png,
        .sw_free = sw_free,
        .sw_warm_up = sw_warm_up,
        .sw_close = sw_close,
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
        .sw_prepare = sw_prepare,
    };
    return &table;
}
