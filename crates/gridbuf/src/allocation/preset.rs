//! Named presets (GT4Py's "backends", GDP-3's "defaults"): a device, a base layout and an
//! alignment, kept in one process-wide registry.

use crate::error::{Error, Result};
use crate::geometry::dims::Dim;
use crate::geometry::layout::BaseLayout;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, RwLock};

/// Where a preset allocates.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// Host memory.
    Cpu,
    /// GPU memory (planned here; allocated by the GPU array library).
    Gpu,
}

impl Device {
    /// Parses `"cpu"` or `"gpu"`.
    pub fn parse(name: &str) -> Result<Device> {
        match name {
            "cpu" => Ok(Device::Cpu),
            "gpu" => Ok(Device::Gpu),
            _ => Err(Error::invalid(
                "device",
                name,
                "expected \"cpu\" or \"gpu\"",
            )),
        }
    }

    /// The lower-case name, `"cpu"` or `"gpu"`.
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Gpu => "gpu",
        }
    }
}

/// A named set of allocation defaults.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Preset {
    /// The name under which the preset is registered.
    pub name: String,
    /// Where arrays of this preset live.
    pub device: Device,
    /// How the axes are ordered in memory.
    pub base_layout: BaseLayout,
    /// Alignment in bytes that rows along the unit-stride axis are padded to (1: no padding).
    pub alignment: usize,
}

impl Preset {
    /// Builds a preset, checking that the alignment is a power of two.
    pub fn new(
        name: &str,
        device: Device,
        base_layout: BaseLayout,
        alignment: usize,
    ) -> Result<Preset> {
        check_alignment(alignment)?;
        Ok(Preset {
            name: name.to_owned(),
            device,
            base_layout,
            alignment,
        })
    }

    /// The layout map this preset gives to arrays with the given dims.
    pub fn layout_map(&self, dims: &[Dim]) -> crate::AxisVec<usize> {
        self.base_layout.layout_map(dims)
    }
}

/// Largest alignment accepted anywhere: 1 GiB is far beyond any page or cache line.
pub const MAX_ALIGNMENT: usize = 1 << 30;

/// Checks that an alignment in bytes is a power of two no larger than [`MAX_ALIGNMENT`].
pub fn check_alignment(alignment: usize) -> Result<()> {
    if alignment.is_power_of_two() && alignment <= MAX_ALIGNMENT {
        Ok(())
    } else {
        Err(Error::invalid(
            "alignment",
            alignment,
            format!("expected a power of two number of bytes between 1 and {MAX_ALIGNMENT}"),
        ))
    }
}

/// The presets every process starts with: GT4Py 1.1/1.2's names and layouts, plus `C` and `F`.
fn builtin_presets() -> Vec<Preset> {
    use BaseLayout::{Semantic, C, F};
    use Device::{Cpu, Gpu};
    let table: [(&str, Device, BaseLayout, usize); 12] = [
        ("C", Cpu, C, 1),
        ("F", Cpu, F, 1),
        ("numpy", Cpu, Semantic([0, 1, 2]), 1),
        ("debug", Cpu, Semantic([0, 1, 2]), 1),
        ("gt:cpu_kfirst", Cpu, Semantic([0, 1, 2]), 1),
        ("gt:cpu_ifirst", Cpu, Semantic([2, 1, 0]), 1),
        ("gt:gpu", Gpu, Semantic([2, 1, 0]), 128),
        ("dace:cpu", Cpu, Semantic([1, 2, 0]), 1),
        ("dace:cpu_kfirst", Cpu, Semantic([0, 1, 2]), 1),
        ("dace:cpu_KJI", Cpu, Semantic([2, 1, 0]), 1),
        ("dace:gpu", Gpu, Semantic([2, 1, 0]), 1),
        ("dace:gpu_IJK", Gpu, Semantic([0, 1, 2]), 1),
    ];
    table
        .into_iter()
        .map(|(name, device, base_layout, alignment)| Preset {
            name: name.into(),
            device,
            base_layout,
            alignment,
        })
        .collect()
}

static REGISTRY: LazyLock<RwLock<BTreeMap<String, Arc<Preset>>>> = LazyLock::new(|| {
    RwLock::new(
        builtin_presets()
            .into_iter()
            .map(|p| (p.name.clone(), Arc::new(p)))
            .collect(),
    )
});

fn read_registry() -> std::sync::RwLockReadGuard<'static, BTreeMap<String, Arc<Preset>>> {
    // A panic while holding the lock cannot leave the map half-updated (inserts are atomic), so
    // a poisoned lock is still safe to use.
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}

/// Looks up a registered preset; `param` names the keyword for the error message.
pub fn lookup(name: &str, param: &str) -> Result<Arc<Preset>> {
    let registry = read_registry();
    registry
        .get(name)
        .cloned()
        .ok_or_else(|| Error::UnknownPreset {
            param: param.into(),
            name: name.into(),
            valid: registry.keys().cloned().collect(),
        })
}

/// Every registered preset, sorted by name.
pub fn all() -> Vec<Arc<Preset>> {
    read_registry().values().cloned().collect()
}

/// Registers a preset; an existing name is replaced only when `replace` is true.
pub fn register(preset: Preset, replace: bool) -> Result<Arc<Preset>> {
    check_alignment(preset.alignment)?;
    if preset.name.is_empty() {
        return Err(Error::invalid(
            "name",
            "",
            "a preset name must not be empty",
        ));
    }
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if !replace && registry.contains_key(&preset.name) {
        return Err(Error::PresetExists { name: preset.name });
    }
    let preset = Arc::new(preset);
    registry.insert(preset.name.clone(), Arc::clone(&preset));
    Ok(preset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_registered() {
        let names: Vec<String> = all().iter().map(|p| p.name.clone()).collect();
        for name in [
            "C",
            "F",
            "numpy",
            "gt:cpu_ifirst",
            "gt:gpu",
            "dace:gpu_IJK",
            "dace:cpu_KJI",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} missing");
        }
        assert_eq!(lookup("gt:gpu", "backend").unwrap().alignment, 128);
    }

    #[test]
    fn unknown_preset_lists_valid_names() {
        let err = lookup("nope", "backend").unwrap_err().to_string();
        assert!(
            err.contains("\"nope\"") && err.contains("gt:cpu_ifirst"),
            "{err}"
        );
    }

    #[test]
    fn register_refuses_silent_replacement() {
        let p = Preset::new("test:custom", Device::Cpu, BaseLayout::C, 64).unwrap();
        register(p.clone(), false).unwrap();
        assert!(matches!(
            register(p.clone(), false),
            Err(Error::PresetExists { .. })
        ));
        register(p, true).unwrap();
        assert!(Preset::new("x", Device::Cpu, BaseLayout::C, 3).is_err());
    }
}
