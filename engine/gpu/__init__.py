"""GPU infrastructure shared by the renderer and the deformer graph (below both): the GL context, the one owner
of every GPU object (GpuResources, with a live-object counter), the shader library and program cache, std430
struct layouts shared with GLSL, and GPU timer scopes."""
