"""engine.render: GL context, shader library, GPU resource ownership, cameras and the scene renderer.

Modules:
  context    create_context (the ONE place a GL context is made), gl_info, doctor_report
  shaderlib  ShaderLibrary (#include/#line/defines preprocessing), ProgramCache (keyed, hot reload)
  resources  GpuResources (one owner per GL object, live counters)
  layouts    Std430Struct (numpy dtype + GLSL struct from one definition), constants shared with GLSL
  camera     Camera, OrbitCamera (float32 4x4, column-vector convention)
  renderer   SceneRenderer: deferred G-buffer from the deformed-vertex SSBOs + compositor, queries
  corners    corner vertices: the G-buffer's indexed draw that still yields triangle + barycentrics
  timers     GpuTimers: per-pass GL timer queries read back a few frames late
  shapes     small procedural meshes (box, sphere, quad)

Importing this package does not import moderngl-dependent modules; import the module you need.
"""
