"""The README's scripting example, run by tests/gl/test_session.py: load, play, deform on the GPU, render, pick."""
from engine import Session

with Session(width=640, height=360) as s:
    hero = s.spawn("humanoid", clip="walk")          # a generated character, or any .gltf/.glb path
    s.fit_camera()
    s.step(frames=30)                                # half a second of fixed steps, deformed and drawn
    s.save_png("out/quickstart.png")
    hit = s.pick(320, 180)                           # entity, glTF node/mesh/primitive, triangle, barycentric
    print(hit.entity == hero.entity, hit.triangle, hit.barycentric)
