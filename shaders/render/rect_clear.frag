#version 430 core
// G-buffer clear, fragment stage: zcopy = 0 ("no surface"); the depth (1, the far plane) comes from the quad
// of render/rect_clear.vert. Albedo and ids are not touched: they mean something only where zcopy != 0.
layout(location = 0) out float o_zcopy;

void main() {
    o_zcopy = 0.0;
}
