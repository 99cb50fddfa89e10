#!/usr/bin/env python3
"""Linear out-of-plane buckling of the large pyramid (base 100, one box thick) on soft contacts.

Soft contacts are springs: at rest a contact point of effective mass m_eff and frequency f
pushes back with k = m_eff (2 pi f)^2 per metre of penetration (the fixed point of the biased
solve: bias rate x mass scale / impulse scale = h omega^2). A row of boxes tilting out of the
pyramid's plane by an angle theta about the line through its contacts' centres compresses the
points at z = +0.5 by 0.5 theta and unloads those at z = -0.5: a rotational spring of
n_points k 0.25 per interface. Gravity pulls a tilted tower further over. Each level is taken
as a rigid slab (its boxes move together out of the plane); the load factor is the smallest
lambda with K v = lambda G v (K: the interfaces' springs, G: gravity's destabilizing
stiffness). Below 1 the pyramid buckles: a disturbance grows instead of dying out.

    python3 scripts/pyramid_buckling.py [--base N] [contact_hz ...]   (needs numpy; base 100 by default)
"""
import sys

import numpy as np

BASE, HALF, MASS, G = 100, 0.5, 100.0, 10.0
INERTIA = MASS * (2 * HALF) ** 2 / 6.0  # a cube about any axis through its centre


def angular(r, n=np.array([0.0, 1.0, 0.0])):
    c = np.cross(r, n)
    return c @ c / INERTIA


def box_on_box_mass():
    """Mean effective normal mass of the 4 points of a box resting half on a box below."""
    ks = []
    for x in (0.0, HALF):  # the overlap spans half of the upper box's bottom face
        for z in (-HALF, HALF):
            upper = np.array([x, -HALF, z])
            lower = np.array([x - HALF, HALF, z])
            ks.append(2.0 / MASS + angular(upper) + angular(lower))
    return np.mean([1.0 / k for k in ks])


def box_on_ground_mass():
    ks = [1.0 / MASS + angular(np.array([x, -HALF, z])) for x in (-HALF, HALF) for z in (-HALF, HALF)]
    return np.mean([1.0 / k for k in ks])


def load_factor(contact_hz, static_hz=60.0):
    k = box_on_box_mass() * (2 * np.pi * contact_hz) ** 2
    k_ground = box_on_ground_mass() * (2 * np.pi * static_hz) ** 2
    # Interface j lies under level j: the ground's 4 points per box, else 2 manifolds x 4
    # points per box of level j.
    spring = np.array([4 * BASE * k_ground * HALF**2] + [8 * (BASE - j) * k * HALF**2 for j in range(1, BASE)])
    # Unknowns: the tilt phi_s of segment s (levels s..s+1); interface j turns by phi_j - phi_{j-1}.
    d = np.eye(BASE) - np.eye(BASE, k=-1)
    stiffness = d.T @ np.diag(spring) @ d
    # Slab i (mass of its BASE - i boxes) at height i + 1/2 drops by 1/2 sum_{s<i} phi_s^2
    # + 1/4 phi_i^2 when tilted.
    slab = MASS * G * (BASE - np.arange(BASE))
    gravity = np.array([slab[s + 1 :].sum() + 0.5 * slab[s] for s in range(BASE)])
    scale = 1.0 / np.sqrt(gravity)
    return np.linalg.eigvalsh(scale[:, None] * stiffness * scale[None, :])[0]


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--base"]:
        BASE = int(args[1])
        args = args[2:]
    print(f"base {BASE}: effective masses: box on box {box_on_box_mass():.1f} kg, box on ground {box_on_ground_mass():.1f} kg")
    for hz in [float(a) for a in args] or [30.0, 60.0, 120.0, 240.0]:
        print(f"contacts at {hz:5.0f} Hz: buckling load factor {load_factor(hz):.3f}")
