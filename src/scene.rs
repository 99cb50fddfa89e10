//! Scenes: a world's whole description as plain data, to write a world out and build it again.
//!
//! A [`Scene`] holds what a [`World`] was built from: its settings, and its bodies, planes, SDF
//! colliders, particles and joints as they were added. [`World::scene`] takes it out of a world
//! and [`World::from_scene`] builds a world from one through the same checks as `World::add_*`,
//! so a bad item gets its typed error, named by its place in the scene ([`Error::InScene`]).
//!
//! With the `serde` feature, [`Scene`], [`World`] and every description in them serialize to and
//! from any serde format: scene files. A world serializes as its scene, and deserializing one
//! builds the world ([`World::from_scene`]). A world written and read back is the same world to
//! the bit, so it steps to the same bits. Missing fields take their defaults: a body needs only
//! its shape, a joint its bodies, anchor and kind, a particle its position, radius and mass,
//! and the settings only what differs from [`WorldDesc::default`]; an unknown field is an error.
//! A material given in part takes its missing fields from [`Material::default`](crate::Material)
//! wherever it is, the particles' ([`ParticleSettings`](crate::ParticleSettings), whose own
//! default friction is 0.5) included. Readers may bound how deeply a file nests: serde_json's
//! 128 levels hold a chain of about 60 CSG operations of one field.
//! A convex hull is stored as its vertices and computed again when read; a grid SDF as its
//! samples ([`GridSdf::from_samples`](crate::sdf::GridSdf::from_samples)).
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use signorini::prelude::*;
//! // A scene file (JSON here: any serde format will do).
//! let text = r#"{
//!     "settings": { "dt": 0.01 },
//!     "planes": [ { "normal": [0, 1, 0], "offset": 0 } ],
//!     "bodies": [
//!         { "shape": { "cuboid": { "half_extents": [0.5, 0.5, 0.5] } }, "position": [0, 2, 0] },
//!         { "shape": { "sphere": { "radius": 0.25 } }, "position": [0, 4, 0], "mass": { "mass": 2 } }
//!     ]
//! }"#;
//! let world: World = serde_json::from_str(text)?;
//! assert_eq!(world.body_count(), 2);
//! assert_eq!(world.desc().dt, 0.01);
//! // Written out and read back: the same world.
//! let again: World = serde_json::from_str(&serde_json::to_string(&world)?)?;
//! assert_eq!(again.scene(), world.scene());
//! # Ok(())
//! # }
//! ```

use crate::body::RigidBodyDesc;
use crate::error::{Error, Result};
use crate::joint::JointDesc;
use crate::particles::Particle;
use crate::sdf::SdfCollider;
use crate::world::{Plane, World, WorldDesc};

/// Everything a [`World`] is built from, as plain data (see [`crate::scene`]).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct Scene {
    /// The world's settings.
    pub settings: WorldDesc,
    /// The bodies, in handle order.
    pub bodies: Vec<RigidBodyDesc>,
    /// The static planes, in handle order.
    pub planes: Vec<Plane>,
    /// The static SDF colliders, in handle order.
    pub sdfs: Vec<SdfCollider>,
    /// The particles, in the order they are read back.
    pub particles: Vec<Particle>,
    /// The joints, in handle order, between bodies named by their index.
    pub joints: Vec<JointDesc>,
}

impl World {
    /// The world's description as a [`Scene`]: its settings and everything added, as stored
    /// (orientations, normals and joint axes normalized), so that
    /// [`World::from_scene`] builds the same world again.
    pub fn scene(&self) -> Scene {
        Scene {
            settings: self.desc,
            bodies: self.bodies.iter().map(|b| b.desc.clone()).collect(),
            planes: self.planes.clone(),
            sdfs: self.sdfs.iter().map(|s| s.collider.clone()).collect(),
            particles: self.particles.clone(),
            joints: self.joints.clone(),
        }
    }

    /// Builds a world from a scene: its settings, then its bodies, planes, SDF colliders,
    /// particles and joints, each through its `World::add_*` and its checks.
    ///
    /// # Errors
    /// The settings' own error ([`WorldDesc::validate`]), or [`Error::InScene`] with the
    /// first rejected item's kind, index and error.
    pub fn from_scene(scene: Scene) -> Result<Self> {
        let mut world = World::new(scene.settings)?;
        let named =
            |item: &'static str, index: usize| move |e: Error| Error::InScene { item, index, error: Box::new(e) };
        for (i, body) in scene.bodies.into_iter().enumerate() {
            world.add_body(body).map_err(named("body", i))?;
        }
        for (i, plane) in scene.planes.into_iter().enumerate() {
            world.add_plane(plane).map_err(named("plane", i))?;
        }
        for (i, sdf) in scene.sdfs.into_iter().enumerate() {
            world.add_sdf(sdf).map_err(named("SDF collider", i))?;
        }
        world.particles.reserve(scene.particles.len());
        for (i, particle) in scene.particles.into_iter().enumerate() {
            world.add_particle(particle).map_err(named("particle", i))?;
        }
        for (i, joint) in scene.joints.into_iter().enumerate() {
            world.add_joint(joint).map_err(named("joint", i))?;
        }
        Ok(world)
    }
}

impl TryFrom<Scene> for World {
    type Error = Error;

    fn try_from(scene: Scene) -> Result<Self> {
        Self::from_scene(scene)
    }
}

impl From<&World> for Scene {
    fn from(world: &World) -> Self {
        world.scene()
    }
}

/// A world's scene by reference: what [`World`] serializes as, without copying its bodies.
#[cfg(feature = "serde")]
#[derive(serde::Serialize)]
struct SceneRef<'a> {
    settings: &'a WorldDesc,
    bodies: Vec<&'a RigidBodyDesc>,
    planes: &'a [Plane],
    sdfs: Vec<&'a SdfCollider>,
    particles: &'a [Particle],
    joints: &'a [JointDesc],
}

#[cfg(feature = "serde")]
impl serde::Serialize for World {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        SceneRef {
            settings: &self.desc,
            bodies: self.bodies.iter().map(|b| &b.desc).collect(),
            planes: &self.planes,
            sdfs: self.sdfs.iter().map(|s| &s.collider).collect(),
            particles: &self.particles,
            joints: &self.joints,
        }
        .serialize(serializer)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for World {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let scene = Scene::deserialize(deserializer)?;
        World::from_scene(scene).map_err(serde::de::Error::custom)
    }
}
