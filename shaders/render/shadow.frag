#version 430 core
// Shadow pass: depth only (the key light's view of the deformed meshes); engine/render/passes/shadow.py.
void main() {}
