"""Nodes (single parent, no loops, TRS xor a decomposable matrix), scenes, skins and the checks between nodes, meshes
and skins. Node hierarchies are walked once, whatever their depth."""
from __future__ import annotations

import numpy as np

from engine.assets.accessors import COMPONENT_NAMES
from engine.assets.errors import AssetError
from engine.assets.gltf.state import UNIT_TOL, LoaderState
from engine.assets.model import Asset, Node, Scene, Skin
from engine.math.transform import decompose


class NodeReader(LoaderState):
    """Builds the nodes, scenes and skins of the asset model."""

    def _nodes(self) -> list[Node]:
        g = self.gltf
        n = len(g.nodes)
        parent = np.full(n, -1, np.int64)
        for i, node in enumerate(g.nodes):
            for k, c in enumerate(node.children or []):
                c = int(c)
                if c == i:
                    raise AssetError(f"nodes[{i}].children[{k}]", f"node loop: nodes[{i}] is its own child")
                if parent[c] >= 0:
                    raise AssetError(f"nodes[{c}]", f"has two parents: nodes[{parent[c]}] and nodes[{i}]")
                parent[c] = i
        # With at most one parent each, a loop is a cycle of parent links: walk up, colouring nodes.
        state = np.zeros(n, np.int8)  # 0 new, 1 on the current path, 2 known to reach a root
        for start in range(n):
            path = []
            v = start
            while v >= 0 and state[v] == 0:
                state[v] = 1
                path.append(v)
                v = int(parent[v])
            if v >= 0 and state[v] == 1:
                raise AssetError(f"nodes[{v}]", f"node loop: nodes[{v}] is its own ancestor")
            state[path] = 2
        nodes = []
        for i, node in enumerate(g.nodes):
            where = f"nodes[{i}]"
            self.part = where
            m = Node(name=node.name or f"node{i}", parent=int(parent[i]),
                     children=[int(c) for c in (node.children or [])])
            raw = self.doc["nodes"][i]
            if "matrix" in raw:
                if any(k in raw for k in ("translation", "rotation", "scale")):
                    raise AssetError(where, "has both a matrix and translation/rotation/scale")
                mat = np.asarray(node.matrix, np.float64).reshape(4, 4).T  # column-major in the file
                check_trs_matrix(mat, f"{where}.matrix")
                m.matrix = mat.astype(np.float32)
                t, r, s = decompose(mat)
                m.translation, m.rotation, m.scale = t, r, s
            else:
                if node.translation is not None:
                    m.translation = np.asarray(node.translation, np.float32)
                if node.scale is not None:
                    m.scale = np.asarray(node.scale, np.float32)
                if node.rotation is not None:
                    q = np.asarray(node.rotation, np.float64)
                    length = float(np.linalg.norm(q))
                    if length < 1e-6:
                        raise AssetError(f"{where}.rotation", f"zero-length quaternion {q.tolist()}")
                    if abs(length - 1) > UNIT_TOL:
                        self.warn(f"{where}.rotation", f"non-unit quaternion (length {length:.6g}) normalised")
                    m.rotation = (q / length).astype(np.float32)
            for key in ("translation", "rotation", "scale", "matrix"):
                value = getattr(m, key)
                if value is not None and not np.isfinite(value).all():
                    raise AssetError(f"{where}.{key}", f"value {value.ravel().tolist()} overflows float32")
            m.mesh = None if node.mesh is None else int(node.mesh)
            m.skin = None if node.skin is None else int(node.skin)
            nodes.append(m)
        return nodes

    def _scenes(self, nodes: list[Node]) -> tuple[list[Scene], int]:
        scenes = []
        for i, sc in enumerate(self.gltf.scenes):
            roots = [int(r) for r in (sc.nodes or [])]
            for k, r in enumerate(roots):
                if nodes[r].parent >= 0:
                    raise AssetError(f"scenes[{i}].nodes[{k}]", f"nodes[{r}] is not a root node (its parent is "
                                                                f"nodes[{nodes[r].parent}])")
            scenes.append(Scene(name=sc.name or f"scene{i}", nodes=roots))
        default = self.doc.get("scene")
        return scenes, 0 if default is None else int(default)

    def _skins(self, nodes: list[Node]) -> list[Skin]:
        skins = []
        top = self._tops(nodes)
        for si, skin in enumerate(self.gltf.skins):
            where = f"skins[{si}]"
            self.part = where
            joints = np.array([int(j) for j in skin.joints], np.int64)
            if len(set(top[joints].tolist())) > 1:
                raise AssetError(f"{where}.joints", "joints do not have a common root (they lie in different "
                                                    "node trees)")
            skeleton = None if skin.skeleton is None else int(skin.skeleton)
            if skeleton is not None and not self._under(nodes, skeleton)[joints].all():
                self.warn(f"{where}.skeleton", f"nodes[{skeleton}] is not an ancestor of every joint; "
                                               "ignored as a hint")
            n_j = len(joints)
            if skin.inverseBindMatrices is None:
                ibm = np.tile(np.eye(4, dtype=np.float32), (n_j, 1, 1))
            else:
                a = int(skin.inverseBindMatrices)
                who = f"{where}.inverseBindMatrices"
                acc = self.reader.meta(a, who)
                if acc["type"] != "MAT4" or int(acc["componentType"]) != 5126 or acc.get("normalized"):
                    raise AssetError(who, f"accessors[{a}] must be MAT4 FLOAT, got {acc['type']} "
                                          f"{COMPONENT_NAMES[int(acc['componentType'])]}")
                if int(acc["count"]) != n_j:
                    raise AssetError(who, f"accessors[{a}] has count {int(acc['count'])}, the skin has {n_j} joints")
                ibm = np.array(self.reader.read(a, who, "ibm"), np.float32)
                last = ibm[:, 3, :]
                bad = np.abs(last - np.array([0, 0, 0, 1], np.float32)).max(axis=1) > 1e-5
                if bad.any():
                    k = int(np.argmax(bad))
                    raise AssetError(who, f"matrix {k} is not affine: last row {last[k].tolist()} (expected 0,0,0,1)")
            skins.append(Skin(name=skin.name or f"skin{si}", joints=joints.astype(np.int64), inverse_bind=ibm,
                              skeleton=skeleton))
        return skins

    @staticmethod
    def _tops(nodes: list[Node]) -> np.ndarray:
        """Topmost ancestor of every node (set-up code, memoised walk; loops were refused before)."""
        top = np.arange(len(nodes))
        done = np.zeros(len(nodes), bool)
        for i in range(len(nodes)):
            chain = []
            v = i
            while not done[v] and nodes[v].parent >= 0:
                chain.append(v)
                v = nodes[v].parent
            root = int(top[v]) if done[v] else v
            top[chain] = root
            done[chain] = True
            top[v] = root
            done[v] = True
        return top

    @staticmethod
    def _under(nodes: list[Node], top: int) -> np.ndarray:
        """(N,) bool: ``top`` and every node below it (one walk over that subtree, however deep)."""
        mark = np.zeros(len(nodes), bool)
        stack = [top]
        while stack:
            v = stack.pop()
            mark[v] = True
            stack.extend(nodes[v].children)
        return mark

    def _node_mesh_checks(self, asset: Asset) -> None:
        in_scene: set[int] = set()
        if asset.scenes:
            for si in range(len(asset.scenes)):
                in_scene.update(asset.scene_nodes(si))
        for i, node in enumerate(asset.nodes):
            where = f"nodes[{i}]"
            raw = self.doc["nodes"][i]
            if node.mesh is None:
                continue
            mesh = asset.meshes[node.mesh]
            n_targets = len(self.doc["meshes"][node.mesh]["primitives"][0].get("targets", []))
            if "weights" in raw and len(raw["weights"]) != n_targets:
                raise AssetError(f"{where}.weights", f"{len(raw['weights'])} weights but meshes[{node.mesh}] has "
                                                     f"{n_targets} morph targets")
            if "weights" in raw:
                w = np.asarray(raw["weights"], np.float64).astype(np.float32)
                if not np.all(np.isfinite(w)):
                    raise AssetError(f"{where}.weights", "weights overflow float32")
                node.weights = w
            skinned = [p.is_skinned for p in mesh.primitives]
            if node.skin is None:
                if any(skinned):
                    self.warn(where, f"meshes[{node.mesh}] has JOINTS/WEIGHTS but the node has no skin: drawn "
                                     "unskinned")
                continue
            if not all(skinned):
                pi = skinned.index(False)
                raise AssetError(f"{where}.skin", f"meshes[{node.mesh}].primitives[{pi}] has no JOINTS_0/WEIGHTS_0, "
                                                  "so it cannot be skinned")
            skin = asset.skins[node.skin]
            n_j = len(skin.joints)
            for pi, p in enumerate(mesh.primitives):
                assert p.joints is not None  # all primitives are skinned (checked above)
                hi = int(p.joints.max(initial=0))
                if hi >= n_j:
                    raise AssetError(f"meshes[{node.mesh}].primitives[{pi}].attributes.JOINTS_0",
                                     f"joint index {hi} >= joint count {n_j} (skins[{node.skin}] via {where})")
            if in_scene and i in in_scene and not set(skin.joints.tolist()) <= in_scene:
                self.warn(f"skins[{node.skin}]", f"joints are not in the scene of skinned {where}; they are "
                                                 "evaluated from the node hierarchy anyway")


def check_trs_matrix(m: np.ndarray, where: str) -> None:
    """A node matrix must be affine and decomposable into T * R * S (orthogonal columns, non-zero scale)."""
    if np.abs(m[3] - np.array([0, 0, 0, 1])).max() > 1e-6:
        raise AssetError(where, f"not decomposable to TRS: last row {m[3].tolist()} (expected 0,0,0,1)")
    cols = m[:3, :3]
    s = np.linalg.norm(cols, axis=0)
    if s.min() < 1e-12:
        raise AssetError(where, "not decomposable to TRS: a zero scale column")
    u = cols / s
    gram = u.T @ u
    if np.abs(gram - np.eye(3)).max() > 1e-3:
        raise AssetError(where, "not decomposable to TRS: the 3x3 part has shear (columns not orthogonal)")

