"""The certify stage: signed certificates anyone holding the public key can check.

Examples:
    >>> import tempfile, pathlib
    >>> from affidavit.core.settings import Settings
    >>> from affidavit.certify import (build_certificate, generate_key, sign_certificate,
    ...                                verify_certificate)
    >>> key = generate_key(pathlib.Path(tempfile.mkdtemp()) / "signing.pem")
    >>> cert = sign_certificate(build_certificate("Q?", "A.", [], [], None, Settings(), []), key)
    >>> verify_certificate(cert, [key.public_key()]).valid
    True
"""

from affidavit.certify.canonical import canonical_bytes, loads_strict
from affidavit.certify.certificate import (
    build_certificate,
    certify_answer,
    load_certificate,
    sign_certificate,
    signed_payload,
    write_certificate,
)
from affidavit.certify.keys import (
    default_key_path,
    generate_key,
    key_id,
    load_public_key,
    load_signing_key,
    trusted_keys,
)
from affidavit.certify.replay import EvidenceSource, replay_certificate, store_lookup
from affidavit.certify.schemas import contracts, export_schemas, schema_of, validate_json
from affidavit.certify.verify import verify_certificate

__all__ = [
    "EvidenceSource",
    "build_certificate",
    "canonical_bytes",
    "certify_answer",
    "contracts",
    "default_key_path",
    "export_schemas",
    "generate_key",
    "key_id",
    "load_certificate",
    "load_public_key",
    "load_signing_key",
    "loads_strict",
    "replay_certificate",
    "schema_of",
    "sign_certificate",
    "signed_payload",
    "store_lookup",
    "trusted_keys",
    "validate_json",
    "verify_certificate",
    "write_certificate",
]
