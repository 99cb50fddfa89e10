// Stage `advance_particles`: one substep of every particle, one thread each: gravity, then the
// straight path swept against every static collider by sphere tracing, impacts with restitution
// and Coulomb friction (seed 003), the rest of the substep swept with the radius less the skin. Twin of `advance_particles` in src/cpu/particles.rs.

fn particle_collider_distance(c: Collider, x: vec3<f32>) -> vec4<f32> {
    if c.node_count == 0u {
        return vec4<f32>(c.normal, dot3(c.normal, x) - c.offset);
    }
    return sdf_evaluate(c.first_node, c.node_count, x);
}

// (gap, index) of the nearest collider to a sphere of the given radius at x.
struct Nearest {
    gap: f32,
    index: u32,
}

fn particle_nearest(x: vec3<f32>, radius: f32) -> Nearest {
    var best = Nearest(3.4028235e38, 0u);
    for (var i = 0u; i < params.collider_count; i++) {
        let gap = particle_collider_distance(collider_at(i), x).w - radius;
        if gap < best.gap {
            best = Nearest(gap, i);
        }
    }
    return best;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn advance_particles(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= params.particle_count {
        return;
    }
    let particle = particles[i];
    var radius = particle.radius;
    var x = particle.position;
    var v = particle.velocity;
    if params.particle_collisions == 0u {
        v += params.h * params.gravity;
    }
    var remaining = params.h;
    for (var impact = 0u; impact < PARTICLE_MAX_IMPACTS; impact++) {
        let speed = sqrt(dot3(v, v));
        var t = 0.0;
        var hit = false;
        var near = Nearest(0.0, 0u);
        var finished = false;
        for (var k = 0u; k < PARTICLE_MARCH_STEPS; k++) {
            near = particle_nearest(x + t * v, radius);
            if near.gap < PARTICLE_SURFACE_EPS {
                hit = true;
                break;
            }
            if speed * (remaining - t) <= near.gap {
                finished = true;
                break;
            }
            t += near.gap / speed;
        }
        if !hit {
            x += select(t, remaining, finished) * v;
            break;
        }
        x += t * v;
        remaining -= t;
        let c = collider_at(near.index);
        let n = particle_collider_distance(c, x).xyz;
        let depth = near.gap - (particle.radius - radius);
        if depth < 0.0 {
            x -= depth * n;
        }
        let vn = dot3(v, n);
        if vn < 0.0 {
            let friction = sqrt(params.particle_friction * c.friction);
            let restitution = max(params.particle_restitution, c.restitution);
            var e = 0.0;
            if -vn > params.restitution_threshold {
                e = restitution;
            }
            let dvn = -(1.0 + e) * vn;
            let vt = v - vn * n;
            let speed_t = sqrt(dot3(vt, vt));
            var slowed = vt;
            if speed_t > 0.0 {
                slowed = vt * ((speed_t - min(friction * dvn, speed_t)) / speed_t);
            }
            v = slowed - e * vn * n;
        }
        radius = particle.radius * (1.0 - PARTICLE_SKIN);
    }
    if radius < particle.radius {
        let near = particle_nearest(x, particle.radius);
        if near.gap < 0.0 {
            x -= near.gap * particle_collider_distance(collider_at(near.index), x).xyz;
        }
    }
    particles[i].position = x;
    particles[i].velocity = v;
}
