"""The deformer graph as data: nodes, the resources between them, and the execution plan derived from them.

Pure Python (no GL): a :class:`GraphConfig` lists nodes; each node names its *stage* (skin, spring, copy,
face_normals, vertex_normals) and binds the stage's fixed ports to named resources. Everything else follows
from those declarations (STYLE.md habit 8, Filament's frame graph):

* **execution order**: a node that reads a resource runs after the node that writes it (stable topological
  order, ties broken by declaration order). Two writers of one resource, a read of a resource nobody
  writes, or a cycle raise ``ValueError``;
* **barriers**: before a node, the bits needed by the resources it reads that an earlier node wrote since
  the last barrier (compute -> compute: SHADER_STORAGE); after the last node, the bits the renderer needs
  for the graph's outputs (vertex pull through SSBOs or vertex attributes: SHADER_STORAGE |
  VERTEX_ATTRIB_ARRAY);
* **frame-dependent loops**: a read of ``"name@previous"`` reads the value ``name`` had at the end of the
  previous frame (the bind positions on the first frame). It creates no ordering edge, so the spring output
  can be fed back into next frame's differential skinning without a cycle.
* **fusion**: a skin node (LBS or DQS, bind mode, reading ``bind``) whose target only one copy node reads
  becomes ONE step of the internal stage ``skin_copy``: a dispatch over the display vertices that skins each
  display vertex (its control point's joints and weights) and writes the display position (and the skinned
  normal) directly. The control-domain target (and the skin's normal transforms) are then never written:
  the plan lists them in ``elided``. The results equal the two-node path (same arithmetic per vertex); a
  graph that needs the control points (springs, IRS, a second reader, ``@previous``) is not fused, and
  ``fuse = false`` in the config keeps every node its own dispatch (to read the control points back).

**Morph targets**: :func:`with_morph` puts a ``morph`` node first in the graph of a mesh with morph targets
(its output, the morphed bind positions, replaces ``bind`` as the skin's source), so such meshes run unfused in a
batch of their own; see engine.skinning.gpu.stages.morph.

Resources live in one of three *domains*: ``control`` (one vec4 per control point), ``display`` (one vec4 per
glTF vertex, what the renderer reads) and ``face`` (one vec4 per triangle); each is pooled over all meshes of
a batch so that one dispatch per stage covers every mesh. ``bind`` is the built-in control-domain resource
holding the bind positions. Port domains are checked.

The file format (TOML or JSON) mirrors :meth:`GraphConfig.to_dict`::

    name = "spring"
    [[nodes]]
    name = "skin"
    stage = "skin"
    inputs = { source = "bind" }
    outputs = { target = "skinned" }
    options = { method = "rigid", mode = "bind" }
    [[nodes]]
    ...
    outputs = { positions = "positions", normals = "normals" }   # top-level: what the renderer reads
    fuse = false                                                  # optional (default true), see fusion
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.skinning import registry
from engine.skinning.config import read_table

# Barrier bits (values of GL_*_BARRIER_BIT; identical to moderngl's constants, kept here so the plan stays
# importable and testable without moderngl).
SHADER_STORAGE_BARRIER_BIT = 0x00002000
VERTEX_ATTRIB_ARRAY_BARRIER_BIT = 0x00000001
ELEMENT_ARRAY_BARRIER_BIT = 0x00000002
COMMAND_BARRIER_BIT = 0x00000040
SHADER_IMAGE_ACCESS_BARRIER_BIT = 0x00000020
BUFFER_UPDATE_BARRIER_BIT = 0x00000200

#: bits a compute stage needs before reading a resource another compute stage wrote: as an SSBO, or as the
#: image copy some stages keep of it (face normals also write an image that vertex normals gather from)
COMPUTE_READ_BITS = SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT
#: bits the renderer needs before pulling graph outputs (SSBO vertex pull or bound as vertex attributes)
RENDER_READ_BITS = SHADER_STORAGE_BARRIER_BIT | VERTEX_ATTRIB_ARRAY_BARRIER_BIT

PREVIOUS = "@previous"
BIND = "bind"
#: the resources :func:`with_morph` names: morphed bind positions (control) and bind normals (display)
MORPHED = "morphed"
MORPHED_NORMALS = "morphed_normals"

SKIN_METHODS = registry.skinning_methods()
#: skinning methods on display vertices with glTF weights (the rest need an attachment binding)
VERTEX_METHODS = registry.vertex_methods()
SKIN_MODES = ("bind", "differential")
#: skin node option ``normals``: "surface" = normals come from the deformed surface (face + vertex normal
#: stages); "skinned" = the skin stage also blends a normal transform per control point (LBS: cofactor of the
#: blended matrix; DQS: blended rotation times the cofactor of the blended stretch) and a copy node with a
#: ``normals`` output applies it to the bind normals of the display vertices (no normal stages needed)
SKIN_NORMALS = ("surface", "skinned")


@dataclass(frozen=True)
class StageSpec:
    """The ports of one stage kind: name -> domain for inputs and (required, optional) outputs, and its
    known options."""

    inputs: dict[str, str]
    outputs: dict[str, str]
    options: dict[str, Any]
    optional_outputs: dict[str, str] = field(default_factory=dict)

    def output_domain(self, port: str) -> str:
        return self.outputs[port] if port in self.outputs else self.optional_outputs[port]


#: the spring node's volume_reduce values (stages.spring.volume_reduce)
VOLUME_REDUCE = ("auto", "group", "point")

#: every stage the GPU graph can run; options listed with their defaults
STAGES: dict[str, StageSpec] = {
    # influence / length_correction / blend: IRS options of engine.skinning.skinning.irs
    # normals: see SKIN_NORMALS
    "skin": StageSpec({"source": "control"}, {"target": "control"},
                      {"method": "lbs", "mode": "bind", "influence": (0.5, 0.5), "length_correction": False,
                       "blend": "nlerp", "normals": "surface"}),
    # check_every: run the convergence check after every k-th iteration (1 reproduces the reference exactly);
    # volume_reduce: the volume term's sums added per work group and region from shared memory ("group"), or one
    # atomic per point ("point"; cheaper on a software rasteriser, where barriers and shared atomics cost more
    # than uncontended atomics), "auto": "point" on llvmpipe / softpipe, else "group" (same sums either way)
    # iterations_per_dispatch: K Jacobi iterations per dispatch on tiles with a frozen halo (stages.spring,
    # springs.tiles); 1: one per dispatch (the untiled reference); the energy and force schemes always run 1
    "spring": StageSpec({"source": "control"}, {"target": "control"},
                        {"check_every": 1, "volume_reduce": "auto", "iterations_per_dispatch": 1}),
    # optional output normals: skinned normals of the display vertices; the source must be written (this
    # frame) by a skin node with normals = "skinned"
    "copy": StageSpec({"source": "control"}, {"target": "display"}, {}, {"normals": "display"}),
    # the springs' optional contact term (stages/contact.py): reads the spring stage's frame of this frame
    "contact": StageSpec({"source": "control"}, {"target": "control"}, {}),
    "face_normals": StageSpec({"positions": "display"}, {"target": "face"}, {}),
    # morph targets (stages/morph.py): the bind pose plus the instance's weighted target deltas; optional
    # output normals: the morphed bind normals a copy with skinned normals transforms. Inserted by with_morph.
    "morph": StageSpec({}, {"target": "control"}, {}, {"normals": "display"}),
    # crease_angle: radians in [0, pi]; absent = smooth over every face around the control point
    "vertex_normals": StageSpec({"positions": "display", "faces": "face"}, {"target": "display"},
                                {"crease_angle": None}),
}


@dataclass
class NodeConfig:
    name: str
    stage: str
    inputs: dict[str, str]
    outputs: dict[str, str]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class GraphConfig:
    """One deformer graph, as data. ``outputs`` maps 'positions'/'normals' to the display resources the
    renderer reads."""

    name: str
    nodes: list[NodeConfig]
    outputs: dict[str, str] = field(default_factory=lambda: {"positions": "positions", "normals": "normals"})
    #: let the planner fuse skin + copy where nothing else reads the skinned control points (module docstring)
    fuse: bool = True

    # ---- construction -------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GraphConfig:
        """Build and validate a graph from its dict layout (:meth:`to_dict`); ValueError names the key
        (``nodes[2].inputs``), the value and what was expected, for wrong types and unknown keys alike."""
        if not isinstance(d, dict):
            raise ValueError(f"a graph config must be a table with a 'nodes' list, got {_show(d)}")
        _known_keys("the graph", d, GRAPH_KEYS)
        if "nodes" not in d:
            raise ValueError(f"a graph config needs a 'nodes' list; got keys {sorted(d)}")
        raw_nodes = d["nodes"]
        if not isinstance(raw_nodes, list):
            raise ValueError(f"nodes = {_show(raw_nodes)}; expected an array of tables ([[nodes]] in TOML)")
        nodes = []
        for i, n in enumerate(raw_nodes):
            where = f"nodes[{i}]"
            if not isinstance(n, dict):
                raise ValueError(f"{where} = {_show(n)}; expected a table with keys {', '.join(NODE_KEYS)}")
            _known_keys(where, n, NODE_KEYS)
            if "stage" not in n:
                raise ValueError(f"node {i} ({n!r}) has no 'stage'; valid stages: {sorted(STAGES)}")
            stage = _string(f"{where}.stage", n["stage"])
            nodes.append(NodeConfig(name=_string(f"{where}.name", n.get("name", stage)), stage=stage,
                                    inputs=_ports(f"{where}.inputs", n.get("inputs", {})),
                                    outputs=_ports(f"{where}.outputs", n.get("outputs", {})),
                                    options=dict(_table(f"{where}.options", n.get("options", {}),
                                                        "a table of option = value"))))
        fuse = d.get("fuse", True)
        if not isinstance(fuse, bool):
            raise ValueError(f"graph option 'fuse' must be true or false, got {fuse!r}")
        outputs = _ports("outputs", d.get("outputs", {"positions": "positions", "normals": "normals"}))
        cfg = cls(name=_string("name", d.get("name", "custom")), nodes=nodes, outputs=outputs, fuse=fuse)
        cfg.validate()
        return cfg

    @classmethod
    def load(cls, path: str | Path) -> GraphConfig:
        """Read a graph from a .toml or .json file (the layout of :meth:`to_dict`, or a ``[graph]`` table of a
        larger file). Every problem (unreadable, not UTF-8, not TOML/JSON, a wrong type or an unknown key) is a
        ValueError starting with the file name."""
        p = Path(path)
        kind = p.suffix.lower()
        if kind not in (".toml", ".json"):
            raise ValueError(f"graph config {str(p)!r}: expected a .toml or .json file")
        data = read_table(p, "deformer graph")
        if "graph" in data:  # a [graph] table inside a larger config file
            data = data["graph"]
            if not isinstance(data, dict):
                raise ValueError(f"{p}: graph = {_show(data)}; expected a table ([graph])")
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"{p}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "outputs": dict(self.outputs),
                             "nodes": [{"name": n.name, "stage": n.stage, "inputs": dict(n.inputs),
                                        "outputs": dict(n.outputs), "options": dict(n.options)} for n in self.nodes]}
        if not self.fuse:  # written only where it differs from the default (files stay as they were)
            d["fuse"] = False
        return d

    def copy(self) -> GraphConfig:
        return GraphConfig.from_dict(copy.deepcopy(self.to_dict()))

    def node(self, name: str) -> NodeConfig:
        for n in self.nodes:
            if n.name == name:
                return n
        raise ValueError(f"no node {name!r}; the graph has {[n.name for n in self.nodes]}")

    # ---- checks ---------------------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ValueError for unknown stages/ports/options, domain mismatches, double writers, reads of
        resources nobody writes, and cycles. Called by every constructor and by :func:`plan`."""
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"node names must be unique; got {names}")
        for n in self.nodes:
            if n.stage not in STAGES:
                raise ValueError(f"node {n.name!r}: unknown stage {n.stage!r}; valid stages: {sorted(STAGES)}")
            spec = STAGES[n.stage]
            if set(n.inputs) != set(spec.inputs):
                raise ValueError(f"node {n.name!r} ({n.stage}): input ports {sorted(n.inputs)}; "
                                 f"the stage has exactly {sorted(spec.inputs)}")
            if not set(spec.outputs) <= set(n.outputs) <= set(spec.outputs) | set(spec.optional_outputs):
                extra = f" (optional: {sorted(spec.optional_outputs)})" if spec.optional_outputs else ""
                raise ValueError(f"node {n.name!r} ({n.stage}): output ports {sorted(n.outputs)}; "
                                 f"the stage has exactly {sorted(spec.outputs)}{extra}")
            for k in n.options:
                if k not in spec.options:
                    raise ValueError(f"node {n.name!r} ({n.stage}): unknown option {k!r}; "
                                     f"valid options: {sorted(spec.options) or 'none'}")
            if n.stage == "skin":
                m = n.options.get("method", "lbs")
                if m not in SKIN_METHODS:
                    raise ValueError(f"node {n.name!r}: skin method {m!r}; valid: {SKIN_METHODS}")
                mode = n.options.get("mode", "bind")
                if mode not in SKIN_MODES:
                    raise ValueError(f"node {n.name!r}: skin mode {mode!r}; valid: {SKIN_MODES}")
                if mode == "differential" and m == "irs":
                    raise ValueError(f"node {n.name!r}: IRS is a direct method and has no differential mode; "
                                     f"use method in ('lbs', 'dqs', 'rigid') or mode='bind'")
                nm = n.options.get("normals", "surface")
                if nm not in SKIN_NORMALS:
                    raise ValueError(f"node {n.name!r}: skin normals {nm!r}; valid: {SKIN_NORMALS}")
                if nm == "skinned" and (m not in VERTEX_METHODS or mode != "bind"):
                    raise ValueError(f"node {n.name!r}: normals='skinned' needs method 'lbs' or 'dqs' in mode "
                                     f"'bind' (got method {m!r}, mode {mode!r}); use normals='surface'")
            if n.stage == "skin":
                inf = n.options.get("influence", (0.5, 0.5))
                if (not isinstance(inf, (list, tuple)) or len(inf) != 2
                        or not all(_is_number(x) and 0.0 <= x <= 1.0 for x in inf)):
                    raise ValueError(f"node {n.name!r}: influence = {_show(inf)}; expected [parent, child], two "
                                     f"numbers in [0, 1]")
                if not isinstance(n.options.get("length_correction", False), bool):
                    raise ValueError(f"node {n.name!r}: length_correction = "
                                     f"{_show(n.options['length_correction'])}; expected true or false")
            if n.stage == "skin" and n.options.get("blend", "nlerp") not in ("nlerp", "matrix"):
                raise ValueError(f"node {n.name!r}: IRS blend {n.options['blend']!r}; valid: 'nlerp', 'matrix'")
            if n.stage == "spring":
                ce = n.options.get("check_every", 1)
                if not isinstance(ce, int) or isinstance(ce, bool) or not 1 <= ce <= 1000:
                    raise ValueError(f"node {n.name!r}: check_every must be an integer in [1, 1000], got {ce!r}")
                kd = n.options.get("iterations_per_dispatch", 1)
                if not isinstance(kd, int) or isinstance(kd, bool) or not 1 <= kd <= 64:
                    raise ValueError(f"node {n.name!r}: iterations_per_dispatch must be an integer in [1, 64], "
                                     f"got {kd!r}")
                vr = n.options.get("volume_reduce", "auto")
                if vr not in VOLUME_REDUCE:
                    raise ValueError(f"node {n.name!r}: volume_reduce = {_show(vr)}; valid: "
                                     f"{', '.join(repr(v) for v in VOLUME_REDUCE)}")
            if n.stage == "vertex_normals" and n.options.get("crease_angle") is not None:
                a = n.options["crease_angle"]
                if not _is_number(a) or not (0.0 <= a <= 3.141592653589793):
                    raise ValueError(f"node {n.name!r}: crease_angle must be in [0, pi] radians, got {a!r}")
        if any(n.stage == "contact" for n in self.nodes) and not any(n.stage == "spring" for n in self.nodes):
            raise ValueError("a contact node needs a spring node in the graph (it reads the spring frame's "
                             f"attachments); nodes: {[n.name for n in self.nodes]}")
        domains = self.resource_domains()
        for n in self.nodes:
            spec = STAGES[n.stage]
            for port, res in n.inputs.items():
                base = res.removesuffix(PREVIOUS)
                if base not in domains:
                    raise ValueError(f"node {n.name!r} reads {res!r}, which no node writes "
                                     f"(written: {sorted(domains)})")
                if domains[base] != spec.inputs[port]:
                    raise ValueError(f"node {n.name!r} port {port!r} takes a {spec.inputs[port]} resource; "
                                     f"{base!r} is a {domains[base]} resource")
        skinned = {r for n in self.nodes if n.stage == "skin" and n.options.get("normals") == "skinned"
                   for r in n.outputs.values()}
        for n in self.nodes:
            if n.stage == "copy" and "normals" in n.outputs and n.inputs["source"] not in skinned:
                raise ValueError(f"node {n.name!r}: a copy with a 'normals' output needs its source written this "
                                 f"frame by a skin node with normals='skinned'; {n.inputs['source']!r} is not "
                                 f"(skinned-normal sources: {sorted(skinned)})")
        for key, res in self.outputs.items():
            if key not in ("positions", "normals"):
                raise ValueError(f"graph output {key!r}: valid outputs are 'positions' and 'normals'")
            if domains.get(res) != "display":
                raise ValueError(f"graph output {key}={res!r} must be a display resource written by a node")
        _ = self.order()  # raises on cycles

    def resource_domains(self) -> dict[str, str]:
        """Every resource with its domain; raises ValueError if a resource has two writers."""
        out: dict[str, str] = {BIND: "control"}
        writer: dict[str, str] = {}
        for n in self.nodes:
            for port, res in n.outputs.items():
                if PREVIOUS in res or res == BIND:
                    raise ValueError(f"node {n.name!r} cannot write {res!r} (reserved name)")
                if res in writer:
                    raise ValueError(f"resource {res!r} is written by both {writer[res]!r} and {n.name!r}")
                writer[res] = n.name
                out[res] = STAGES[n.stage].output_domain(port)
        return out

    def order(self) -> list[NodeConfig]:
        """Nodes in execution order: writers before same-frame readers, else declaration order."""
        writer = {res: n.name for n in self.nodes for res in n.outputs.values()}
        deps = {n.name: {writer[r] for r in n.inputs.values() if PREVIOUS not in r and r in writer}
                for n in self.nodes}
        # a node reading X@previous must run before X is overwritten this frame (write-after-read)
        for n in self.nodes:
            for r in n.inputs.values():
                if r.endswith(PREVIOUS):
                    w = writer.get(r.removesuffix(PREVIOUS))
                    if w is not None and w != n.name:
                        deps[w].add(n.name)
        done: list[NodeConfig] = []
        left = list(self.nodes)
        while left:
            ready = [n for n in left if deps[n.name] <= {d.name for d in done}]
            if not ready:
                raise ValueError(f"the deformer graph has a cycle among {[n.name for n in left]}; "
                                 f"read 'name{PREVIOUS}' to feed a result back into the next frame")
            done.append(ready[0])
            left.remove(ready[0])
        return done


@dataclass(frozen=True)
class PlanStep:
    node: NodeConfig
    barrier_before: int  # GL barrier bits issued before this node runs (0: none)
    #: names of the config nodes this step runs (one, or several for a fused stage)
    covers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """What the graph executes per frame: ordered steps with their barriers, the final barrier for the
    renderer, the resources read at ``@previous`` (kept across frames) and each resource's domain."""

    steps: tuple[PlanStep, ...]
    final_barrier: int
    feedback: tuple[str, ...]
    domains: dict[str, str]
    outputs: dict[str, str]
    #: resources no step writes because their writer was fused with their only reader (not allocated)
    elided: tuple[str, ...] = ()


def fusions(config: GraphConfig) -> dict[str, NodeConfig]:
    """The skin + copy pairs the planner fuses: copy node name -> its skin node (see the module docstring).

    A pair qualifies when the skin is LBS or DQS in bind mode reading ``bind``, and the copy is the only node
    that reads the skin's target (at any port, ``@previous`` included). Empty when ``config.fuse`` is false."""
    if not config.fuse:
        return {}
    readers: dict[str, list[NodeConfig]] = {}
    for n in config.nodes:
        for r in n.inputs.values():
            readers.setdefault(r.removesuffix(PREVIOUS), []).append(n)
    out: dict[str, NodeConfig] = {}
    for n in config.nodes:
        o = n.options
        if (n.stage != "skin" or o.get("method", "lbs") not in VERTEX_METHODS or o.get("mode", "bind") != "bind"
                or n.inputs["source"] != BIND):
            continue
        rd = readers.get(n.outputs["target"], [])
        if len(rd) == 1 and rd[0].stage == "copy" and rd[0].inputs["source"] == n.outputs["target"]:
            out[rd[0].name] = n
    return out


def _fused_node(skin: NodeConfig, copy_node: NodeConfig) -> NodeConfig:
    """The node of the internal stage ``skin_copy`` (never declared in a config; stages.skin_copy runs it): the
    skin's input and options, the copy's outputs (positions, and the skinned normals where the copy has them)."""
    return NodeConfig(name=f"{skin.name}+{copy_node.name}", stage="skin_copy", inputs=dict(skin.inputs),
                      outputs=dict(copy_node.outputs), options=dict(skin.options))


def plan(config: GraphConfig) -> Plan:
    """Derive execution order and barrier bits from the node declarations (see the module docstring)."""
    config.validate()
    domains = config.resource_domains()
    fused = fusions(config)
    fused_skins = {s.name for s in fused.values()}
    steps = []
    dirty: set[str] = set()  # written since the last barrier
    read_prev: set[str] = set()  # read at @previous since the last barrier
    for node in config.order():
        # a fused pair runs at the copy's place: the skin only feeds the copy, and the copy's outputs must not
        # be written before nodes that read them @previous (the order puts those before the copy)
        if node.name in fused_skins:
            continue
        n = node
        covers: tuple[str, ...] = (node.name,)
        if node.name in fused:
            n = _fused_node(fused[node.name], node)
            covers = (fused[node.name].name, node.name)
        # a @previous read of a resource rewritten this frame needs no barrier (it was written last frame and a
        # barrier ended that frame), a same-frame read of a dirty resource does
        need = {r for r in n.inputs.values() if PREVIOUS not in r} & dirty
        # write-after-read: overwriting a resource a @previous reader used since the last barrier
        war = set(n.outputs.values()) & read_prev
        bits = COMPUTE_READ_BITS if (need or war) else 0
        if bits:
            dirty.clear()
            read_prev.clear()
        steps.append(PlanStep(n, bits, covers))
        dirty |= set(n.outputs.values())
        read_prev |= {r.removesuffix(PREVIOUS) for r in n.inputs.values() if r.endswith(PREVIOUS)}
    feedback = tuple(sorted({r.removesuffix(PREVIOUS) for n in config.nodes for r in n.inputs.values()
                             if r.endswith(PREVIOUS)}))
    # outputs are read by the renderer; feedback resources by the next frame's compute stages
    final = RENDER_READ_BITS | (COMPUTE_READ_BITS if dirty else 0)
    elided = tuple(sorted(s.outputs["target"] for s in fused.values()))
    return Plan(tuple(steps), final, feedback, domains, dict(config.outputs), elided)


def with_morph(config: GraphConfig, *, normals: bool = False) -> GraphConfig:
    """``config`` for a mesh with morph targets: a ``morph`` node first, and every read of the bind pose reads
    its output (the morphed bind positions) instead; with ``normals`` (the mesh has NORMAL deltas) and a copy
    that transforms bind normals, the morph node also writes the morphed bind normals, which that copy then
    transforms (engine.skinning.gpu.contexts). A graph that already has a morph node is returned as it is.

    A skin reading the morphed resource is not fused with its copy (fusion needs the static bind pose), so a
    morphed mesh runs skin -> copy and every other mesh keeps the fused path. A differential skin (the
    spring-feedback graph) reads its own last result, not the bind pose: there the morph reaches the surface
    only through the springs' rest state (built from the morphed rest at the default weights)."""
    if any(n.stage == "morph" for n in config.nodes):
        return config
    d = config.to_dict()
    taken = {n["name"] for n in d["nodes"]}
    name = "morph"
    while name in taken:
        name += "_"
    for n in d["nodes"]:
        n["inputs"] = {p: (MORPHED if r == BIND else r) for p, r in n["inputs"].items()}
    outs = {"target": MORPHED}
    if normals and any(n["stage"] == "copy" and "normals" in n["outputs"] for n in d["nodes"]):
        outs["normals"] = MORPHED_NORMALS
    d["nodes"].insert(0, {"name": name, "stage": "morph", "inputs": {}, "outputs": outs})
    return GraphConfig.from_dict(d)


# ---- the built-in graphs ----------------------------------------------------------------------------------
def _normals_tail(source: str, skinned: bool = False) -> list[dict[str, Any]]:
    if skinned:
        return [{"name": "copy", "stage": "copy", "inputs": {"source": source},
                 "outputs": {"target": "positions", "normals": "normals"}}]
    return [
        {"name": "copy", "stage": "copy", "inputs": {"source": source}, "outputs": {"target": "positions"}},
        {"name": "face_normals", "stage": "face_normals", "inputs": {"positions": "positions"},
         "outputs": {"target": "face_normals"}},
        {"name": "vertex_normals", "stage": "vertex_normals",
         "inputs": {"positions": "positions", "faces": "face_normals"}, "outputs": {"target": "normals"}},
    ]


def default_config(method: str = "spring", *, skin: str | None = None, normals: str | None = None,
                   contact: bool = False) -> GraphConfig:
    """The built-in graphs.

    ``method`` in lbs | dqs: skin (normals skinned with the same blend) -> copy (positions and normals); with
    ``normals="surface"``: skin -> copy -> face normals -> vertex normals, normals recomputed from the deformed
    surface. ``method`` in rigid | irs: skin -> copy -> face normals -> vertex normals (no springs).
    ``method == "spring"``: skin (``skin``, default rigid, as the research initialises springs) -> spring
    -> copy -> normals. ``method == "spring-feedback"``: the frame-dependent loop: differential skinning of
    the previous frame's spring result -> spring -> copy -> normals. ``contact`` (spring graphs only): a
    contact node after the spring (``[spring] contact = true``; engine.skinning.contact).
    """
    valid = registry.names(device="gpu", public_only=False)
    if method not in valid:
        raise ValueError(f"graph method {method!r}; valid: {valid}")
    if normals is not None and normals not in SKIN_NORMALS:
        raise ValueError(f"normals {normals!r}; valid: {SKIN_NORMALS}")
    if normals == "skinned" and method not in VERTEX_METHODS:
        raise ValueError(f"normals='skinned' is for the 'lbs' and 'dqs' graphs, not {method!r} (the surface of "
                         "rigid/irs/spring graphs changes shape: their normals come from it)")
    if method in SKIN_METHODS:
        skinned = method in VERTEX_METHODS and normals != "surface"
        opts = {"method": method, "mode": "bind"}
        if skinned:
            opts["normals"] = "skinned"
        nodes = [{"name": "skin", "stage": "skin", "inputs": {"source": BIND}, "outputs": {"target": "skinned"},
                  "options": opts}] + _normals_tail("skinned", skinned)
        return GraphConfig.from_dict({"name": method, "nodes": nodes})
    skin_method = skin or "rigid"
    if method == "spring":
        nodes = [{"name": "skin", "stage": "skin", "inputs": {"source": BIND}, "outputs": {"target": "skinned"},
                  "options": {"method": skin_method, "mode": "bind"}}]
    else:
        nodes = [{"name": "skin", "stage": "skin", "inputs": {"source": "deformed" + PREVIOUS},
                  "outputs": {"target": "skinned"}, "options": {"method": skin_method, "mode": "differential"}}]
    spring_out = "sprung" if contact else "deformed"
    nodes.append({"name": "spring", "stage": "spring", "inputs": {"source": "skinned"},
                  "outputs": {"target": spring_out}})
    if contact:
        nodes.append({"name": "contact", "stage": "contact", "inputs": {"source": spring_out},
                      "outputs": {"target": "deformed"}})
    return GraphConfig.from_dict({"name": method, "nodes": nodes + _normals_tail("deformed")})


# ---- reading graph files: every error names the key and what was expected ---------------------------------
GRAPH_KEYS = ("name", "nodes", "outputs", "fuse")
NODE_KEYS = ("name", "stage", "inputs", "outputs", "options")


def _show(v: Any) -> str:
    """A value as the user wrote it, shortened, with its type when that is the point."""
    text = repr(v)
    text = text if len(text) <= 60 else text[:57] + "..."
    kind = {dict: "a table", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number"}.get(type(v), type(v).__name__)
    return f"{text} ({kind})"


def _is_number(v: Any) -> bool:
    """A finite number that is not a bool (huge ints are numbers; comparisons with them are exact)."""
    return isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and math.isfinite(v)


def _known_keys(where: str, d: dict[str, Any], valid: tuple[str, ...]) -> None:
    unknown = [k for k in d if k not in valid]
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} in {where}; valid keys: {', '.join(valid)}")


def _string(where: str, v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"{where} = {_show(v)}; expected a string")
    return v


def _table(where: str, v: Any, expected: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ValueError(f"{where} = {_show(v)}; expected {expected}")
    return v


def _ports(where: str, v: Any) -> dict[str, str]:
    """A ``{ port = "resource" }`` table: string keys and string values."""
    table = _table(where, v, 'a table of port = "resource" strings')
    for port, res in table.items():
        _string(f"{where}.{port}", res)
    return dict(table)
