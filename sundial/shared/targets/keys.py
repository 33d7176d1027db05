"""What a delivery reads secrets with, given by its caller: `sundial.shared` builds no AWS client."""

from __future__ import annotations

from dataclasses import dataclass

from sundial.shared.targets.sealing import HeaderOpener
from sundial.shared.targets.secrets import SecretResolver
from sundial.shared.targets.signing import Signer


@dataclass(frozen=True)
class DeliveryKeys:
    """What the worker reads secrets with: header references, sealed header values, and the signing
    secret."""

    resolver: SecretResolver | None = None
    signer: Signer | None = None
    opener: HeaderOpener | None = None

    def known_values(self) -> list[str]:
        """Every secret read so far: what no error text may show."""
        return [
            *(self.resolver.known_values() if self.resolver else ()),
            *(self.signer.known_values() if self.signer else ()),
            *(self.opener.known_values() if self.opener else ()),
        ]
