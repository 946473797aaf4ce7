"""engine.render: cameras and the deferred scene renderer (GPU infrastructure -- context, shader library,
resources, layouts, timers -- is in engine.gpu, below render and skinning).

Where things are:
  renderer    SceneRenderer: the facade (public API; runs one frame as the frame graph plans it)
  framegraph  passes as data (what each reads and writes) -> order, memory barriers, GPU timer scopes
  passes/     one module per pass, in frame order:
                gbuffer   ``rects`` (screen rectangles start empty), ``gbuffer`` and ``layer:NAME``
                shadow    ``shadow`` (key-light shadow map, shadows="map")
                backdrop  ``backdrop`` (background + ground grid, cached)
                compose   ``compose`` (depth compositor, lighting, debug views, contact shadows)
                overlay   ``ui`` (overlay callback)
                present   ``present`` (copy to the window)
  meshes      mesh registry: MeshHandle, per-asset GPU data shared with reference counts, id table
  targets     G-buffers, frame and backdrop targets, screen rectangles; resize
  queries     pixel queries (sync, async PendingQuery), surface arrays, evaluation of surface points
  surface     the id-texel codec (numpy side of shaders/include/gbuffer_codec.glsl), SurfaceHit, unprojection
  programs    program variants (defines per pass) and vertex arrays over the shader library's cache
  look        LookSettings, debug VIEWS, lights
  state       what the passes, the queries and the facade share
  camera      Camera, OrbitCamera (float32 4x4, column-vector convention)
  corners     corner vertices: the G-buffer's indexed draw that still yields triangle + barycentrics
  shapes      small procedural meshes (box, sphere, quad)

Surface points are plain data (mesh id, triangle, barycentric) defined in engine.input.picking, which also
holds the query protocol the renderer implements; render imports input there, never the other way round.

Importing this package does not import moderngl-dependent modules; import the module you need.
"""
