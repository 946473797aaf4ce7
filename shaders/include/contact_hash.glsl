// The contact stage's hashed grid (contact_grid.comp builds it, contact.comp reads it): a point's cell for the
// instance's cell size, and the bucket of a cell of instance k in a table of `table` buckets (a power of two).
ivec3 contact_cell(vec3 x, float cell) { return ivec3(floor(x / cell)); }

uint contact_bucket(ivec3 c, int k, uint table) {
    uvec3 u = uvec3(c);
    return ((u.x * 73856093u) ^ (u.y * 19349663u) ^ (u.z * 83492791u) ^ (uint(k) * 2654435761u)) & (table - 1u);
}
