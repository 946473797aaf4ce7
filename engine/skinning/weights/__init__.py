"""Skin-weight authoring: the tools a rigger uses on glTF JOINTS_n/WEIGHTS_n, as numpy/scipy on plain arrays.

* :mod:`.table`     dense (V, J) weight matrices <-> glTF influence slots (4 per set, rows sorted by weight),
                    normalisation with locked joints, the validity check every output passes;
* :mod:`.io`        the skinned primitives of an asset with their weights as stored, and writing every set back
                    into a copy of the source document (float32 weights, nothing else changed);
* :mod:`.paint`     paint (add/subtract/replace/blur with falloff), smooth, normalize, mirror by joint name,
                    limit to N influences, prune below a threshold;
* :mod:`.ops`       the JSON ops list of ``weights edit`` (checked, then run with the paint tools);
* :mod:`.mohr`      direct manipulation of one vertex (Mohr, Tokheim, Gleicher 2003): the target projected
                    onto the convex hull LBS can reach, exact weights inside, the LP for more than 4 influences,
                    several poses as a least-squares compromise;
* :mod:`.influence` co-movement regions (Lewis and Anjyo): the score of every vertex's trajectory against one
                    vertex's (or a joint's), the region above a threshold, the joints that suit it;
* :mod:`.spline`    isoline splines with iso-values (Bang and Lee 2018): the biharmonic-like solve
                    (alpha Q + A^T A) w = A^T s, local or global, and the anchor basis K for fast drags;
* :mod:`.auto`      automatic weights: bone heat diffusion and bounded biharmonic weights.

Everything here works on one primitive's display vertices (glTF vertex order); positions are bind positions.
"""
