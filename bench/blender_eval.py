"""Blender's side of ``bench bake``: per-frame evaluation of a skinned glTF in ``bpy`` (Blender as a module).

Run as a subprocess by ``bench/bench_bake.py`` (``python bench/blender_eval.py CONFIG_JSON``; the project never
imports ``bpy``): an empty factory scene, the asset imported with ``bpy.ops.import_scene.gltf``, then for each
timed round ``frames`` evaluations spread evenly over the first action's frame range, each the way a bake
script reads a deformed mesh: ``scene.frame_set(frame, subframe=...)``, the evaluated depsgraph, the
evaluated object's ``to_mesh()`` and one ``foreach_get("co")`` of its vertices into a numpy array,
``to_mesh_clear()``. Rounds alternate between the importer's modifiers alone (the Armature modifier) and
with a Corrective Smooth modifier of ``smooth`` iterations after it (Blender's answer to the volume loss that
the spring deformer addresses; 0 skips it), switched by the modifier's viewport toggle.

CONFIG_JSON: ``{"asset": path, "frames": int, "rounds": int, "smooth": int}``. Prints one line
``BPY_RESULT {"version": ..., "vertices": ..., "threads": ..., "armature": [ms per frame per round],
"smooth": [...]}``. Asserts nothing.
"""
from __future__ import annotations

import json
import sys
import time

import numpy as np


def _evaluate(bpy, ob, times: np.ndarray, out: np.ndarray) -> float:  # noqa: ANN001 - bpy has no types
    """ms per frame of evaluating ``ob`` at each frame number in ``times`` and reading its vertices."""
    scene = bpy.context.scene
    t0 = time.perf_counter()
    for f in times:
        whole = int(np.floor(f))
        scene.frame_set(whole, subframe=float(f - whole))
        depsgraph = bpy.context.evaluated_depsgraph_get()
        evaluated = ob.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        mesh.vertices.foreach_get("co", out)
        evaluated.to_mesh_clear()
    return (time.perf_counter() - t0) * 1e3 / len(times)


def main(config: dict) -> dict:
    """Import the asset, time the rounds; the result dict printed as BPY_RESULT."""
    import bpy  # Blender as a module: only in this subprocess

    bpy.ops.wm.read_factory_settings(use_empty=True)
    for ob in list(bpy.data.objects):  # nothing else in the scene's depsgraph
        bpy.data.objects.remove(ob)
    bpy.ops.import_scene.gltf(filepath=str(config["asset"]))
    skinned = [ob for ob in bpy.data.objects
               if ob.type == "MESH" and any(m.type == "ARMATURE" for m in ob.modifiers)]
    if not skinned or not bpy.data.actions:
        raise ValueError(f"{config['asset']}: needs a skinned mesh and an animation, found "
                         f"{len(skinned)} skinned meshes and {len(bpy.data.actions)} actions")
    ob = skinned[0]
    first, last = bpy.data.actions[0].frame_range
    times = np.linspace(float(first), float(last), int(config["frames"]))
    out = np.empty(3 * len(ob.data.vertices), np.float32)
    _evaluate(bpy, ob, times[:10], out)  # warm-up: first evaluation builds the depsgraph
    result: dict = {"version": bpy.app.version_string, "vertices": len(ob.data.vertices),
                    "threads": bpy.context.scene.render.threads, "armature": [], "smooth": []}
    smooth = None
    if int(config["smooth"]) > 0:
        smooth = ob.modifiers.new("bench corrective smooth", "CORRECTIVE_SMOOTH")
        smooth.iterations = int(config["smooth"])
        smooth.show_viewport = False  # the evaluated depsgraph is the viewport's: off = not evaluated
    for _ in range(int(config["rounds"])):  # alternating, so that both see the same drift of the machine
        result["armature"].append(_evaluate(bpy, ob, times, out))
        if smooth is not None:
            smooth.show_viewport = True
            result["smooth"].append(_evaluate(bpy, ob, times, out))
            smooth.show_viewport = False
    return result


if __name__ == "__main__":
    print("BPY_RESULT", json.dumps(main(json.loads(sys.argv[1]))), flush=True)
