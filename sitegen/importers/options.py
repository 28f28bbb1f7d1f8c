"""Options of `sitegen import` that fill what a source file lacks."""

from __future__ import annotations

import msgspec

from runner.bundle.overrides import Metadata
from runner.bundle.schema import Bundle, Topology


class ImportOptions(Metadata, kw_only=True):
    """Overrides given on the command line, the runner's metadata flags and the launch command; None means: take it from the file."""

    launch_command: str | None = None


def apply_options(bundle: Bundle, options: ImportOptions) -> Bundle:
    """The bundle with every given option filling or overriding what the source said."""
    def pick(given: object, found: object) -> object:
        return found if given is None else given

    hw, engine = bundle.hardware, bundle.engine
    return msgspec.structs.replace(
        bundle,
        model=pick(options.model, bundle.model),
        submitter=pick(options.submitter, bundle.submitter),
        origin=pick(options.origin, bundle.origin),
        launch_command=pick(options.launch_command, bundle.launch_command),
        hardware=msgspec.structs.replace(
            hw, type=pick(options.hardware_type, hw.type), gpu=pick(options.gpu, hw.gpu),
            gpu_count=pick(options.gpu_count, hw.gpu_count), vram_per_gpu_gb=pick(options.vram_per_gpu_gb, hw.vram_per_gpu_gb),
            os=pick(options.os, hw.os),
        ),
        engine=msgspec.structs.replace(
            engine, name=pick(options.engine_name, engine.name), version=pick(options.engine_version, engine.version),
            quantization=pick(options.quantization, engine.quantization), backend=pick(options.backend, engine.backend),
            repository=pick(options.repository, engine.repository), build=pick(options.build, engine.build),
            commit=pick(options.commit, engine.commit),
        ),
        run=msgspec.structs.replace(
            bundle.run, served_model=pick(options.served_model, bundle.run.served_model), revision=pick(options.revision, bundle.run.revision),
        ),
        topology=_topology(bundle, options),
    )


def _topology(bundle: Bundle, options: ImportOptions) -> Topology | msgspec.UnsetType:
    """The bundle's topology with the given --nodes, --prefill-gpus and --decode-gpus over it."""
    given = {name: getattr(options, name) for name in ("nodes", "prefill_gpus", "decode_gpus")
             if getattr(options, name) is not None}
    if not given:
        return bundle.topology
    return msgspec.structs.replace(bundle.topology if isinstance(bundle.topology, Topology) else Topology(), **given)
