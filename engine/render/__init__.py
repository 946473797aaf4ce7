"""engine.render: cameras and the scene renderer (GPU infrastructure -- context, shader library, resources,
layouts, timers -- is in engine.gpu, below render and skinning).

Modules:
  camera     Camera, OrbitCamera (float32 4x4, column-vector convention)
  renderer   SceneRenderer: deferred G-buffer from the deformed-vertex SSBOs + compositor, queries
  corners    corner vertices: the G-buffer's indexed draw that still yields triangle + barycentrics
  shapes     small procedural meshes (box, sphere, quad)

Importing this package does not import moderngl-dependent modules; import the module you need.
"""
