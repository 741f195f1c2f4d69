"""Ed25519 signing keys: generation, loading, key ids and the trusted-key set.

The private key is a PKCS#8 PEM file written with mode 0600 (default
``<home>/keys/signing.pem``, home from ``AFFIDAVIT_HOME`` or the user's config directory); its
public key sits beside it as ``signing.pub.pem``. A key id is the first 16 hex digits of the
sha256 of the raw 32-byte public key.

Examples:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "signing.pem"
    >>> key = generate_key(path)
    >>> key_id(key.public_key()) == key_id(load_public_key(public_key_path(path)))
    True
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from affidavit.core.errors import CertificateError, InputError, SigningKeyError
from affidavit.core.limits import MAX_KEY_BYTES, read_bounded
from affidavit.core.settings import Settings

logger = logging.getLogger(__name__)

__all__ = [
    "PublicKeyLike",
    "default_key_path",
    "generate_key",
    "key_id",
    "load_private_key",
    "load_public_key",
    "load_signing_key",
    "public_key_from_b64",
    "public_key_path",
    "raw_public_key",
    "trusted_keys",
]

PublicKeyLike = Ed25519PublicKey | bytes | str | Path


def default_key_path(settings: Settings) -> Path:
    """The signing key path: ``certify.key_path``, else ``<home>/keys/signing.pem``."""
    if settings.certify.key_path is not None:
        return settings.certify.key_path.expanduser()
    return settings.resolved_home() / "keys" / "signing.pem"


def public_key_path(private_path: str | Path) -> Path:
    """Where the public key of a private key file lives (``signing.pem`` -> ``signing.pub.pem``)."""
    private_path = Path(private_path)
    return private_path.with_name(f"{private_path.stem}.pub.pem")


def raw_public_key(key: Ed25519PublicKey) -> bytes:
    """The raw 32 bytes of a public key."""
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(key: Ed25519PublicKey) -> str:
    """First 16 hex digits of the sha256 of the raw public key."""
    return hashlib.sha256(raw_public_key(key)).hexdigest()[:16]


def public_key_from_b64(text: str) -> Ed25519PublicKey:
    """Decode a base64 raw public key (as embedded in certificates).

    Raises:
        CertificateError: not base64 or not 32 bytes.
    """
    try:
        raw = base64.b64decode(text, validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError) as exc:
        raise CertificateError(f"embedded public key is malformed: {exc}") from exc


def generate_key(
    path: str | Path, *, force: bool = False, passphrase: str | None = None
) -> Ed25519PrivateKey:
    """Create a new Ed25519 key: private PEM at ``path`` (mode 0600), public PEM beside it.

    Args:
        path: private key file to write; parent folders are created (mode 0700).
        force: replace an existing key (the old one is lost: certificates it signed still verify
            against its public key only if you kept it).
        passphrase: encrypt the private key with it (PKCS#8, the library's best available
            encryption); None writes it unencrypted, protected by file mode only.

    Raises:
        SigningKeyError: the key exists and ``force`` is False, or it cannot be written.
    """
    path = Path(path)
    pub_path = public_key_path(path)
    if path.exists() and not force:
        raise SigningKeyError(
            f"a signing key already exists at {path}; pass --force to replace it",
            source=str(path),
        )
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(passphrase.encode("utf-8"))
        if passphrase
        else serialization.NoEncryption(),
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.unlink(missing_ok=True)
        # created 0600 from the start: the key is never readable by others, even briefly
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(private_pem)
        os.replace(tmp, path)
        pub_path.write_bytes(public_pem)
    except OSError as exc:
        raise SigningKeyError(
            f"cannot write signing key {path}: {exc.strerror or exc}", source=str(path)
        ) from exc
    logger.info("generated signing key %s (key id %s)", path, key_id(key.public_key()))
    return key


def load_private_key(path: str | Path, passphrase: str | None = None) -> Ed25519PrivateKey:
    """Read a PKCS#8 PEM Ed25519 private key (encrypted ones need ``passphrase``).

    Raises:
        SigningKeyError: missing, unreadable, wrong or missing passphrase, or not Ed25519.
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = read_bounded(fh, MAX_KEY_BYTES, f"signing key {path}")
    except InputError as exc:
        raise SigningKeyError(exc.message, source=str(path)) from None
    except FileNotFoundError:
        raise SigningKeyError(
            f"no signing key at {path}: run `affidavit keys generate` or set certify.key_path",
            source=str(path),
        ) from None
    except OSError as exc:
        raise SigningKeyError(
            f"cannot read signing key {path}: {exc.strerror or exc}", source=str(path)
        ) from exc
    encrypted = b"ENCRYPTED" in data
    if encrypted and not passphrase:
        raise SigningKeyError(
            f"signing key {path} is encrypted: set AFFIDAVIT_CERTIFY__KEY_PASSPHRASE",
            source=str(path),
        )
    try:
        key = serialization.load_pem_private_key(
            data, password=passphrase.encode("utf-8") if encrypted and passphrase else None
        )
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        what = "the passphrase is wrong or the key is damaged" if encrypted else str(exc)
        raise SigningKeyError(
            f"signing key {path} cannot be read as a PEM private key: {what}", source=str(path)
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(
            f"signing key {path} is a {type(key).__name__}, not Ed25519", source=str(path)
        )
    return key


def load_signing_key(settings: Settings) -> Ed25519PrivateKey:
    """The configured signing key (see `default_key_path`).

    Raises:
        SigningKeyError: no key there (the message says how to create one), or unreadable.
    """
    secret = settings.certify.key_passphrase
    return load_private_key(
        default_key_path(settings), secret.get_secret_value() if secret is not None else None
    )


def load_public_key(source: PublicKeyLike) -> Ed25519PublicKey:
    """A public key from a key object, raw 32 bytes, PEM bytes/text, or a PEM file path.

    A private key PEM is accepted too (its public half is used).

    Raises:
        CertificateError: unreadable or not an Ed25519 key.
    """
    if isinstance(source, Ed25519PublicKey):
        return source
    where = None
    data: bytes
    if isinstance(source, Path):
        where = str(source)
        try:
            with source.open("rb") as fh:
                data = read_bounded(fh, MAX_KEY_BYTES, f"public key {source}")
        except InputError as exc:
            raise CertificateError(exc.message, source=where) from None
        except OSError as exc:
            raise CertificateError(
                f"cannot read public key {source}: {exc.strerror or exc}", source=where
            ) from exc
    elif isinstance(source, str):
        data = source.encode("utf-8")
    else:
        data = source
    if len(data) == 32 and b"-----BEGIN" not in data:
        return Ed25519PublicKey.from_public_bytes(data)
    try:
        if b"PRIVATE KEY" in data:
            private = serialization.load_pem_private_key(data, password=None)
            if isinstance(private, Ed25519PrivateKey):
                return private.public_key()
            raise CertificateError(f"{where or 'key'} is not an Ed25519 key", source=where)
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise CertificateError(
            f"{where or 'key'} is not a PEM Ed25519 public key: {exc}", source=where
        ) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise CertificateError(
            f"{where or 'key'} is a {type(key).__name__}, not Ed25519", source=where
        )
    return key


def trusted_keys(
    settings: Settings | None = None,
    extra: Iterable[PublicKeyLike] = (),
    *,
    include_own: bool = True,
) -> dict[str, Ed25519PublicKey]:
    """The keys a verifier trusts, by key id.

    ``extra`` (e.g. ``--public-key FILE``), ``settings.certify.trusted_keys`` and, with
    ``include_own``, the public half of the user's own signing key when it exists.

    Raises:
        CertificateError: a named key file is unreadable or not Ed25519.
    """
    keys: list[Ed25519PublicKey] = [load_public_key(k) for k in extra]
    if settings is not None:
        keys.extend(load_public_key(p.expanduser()) for p in settings.certify.trusted_keys)
        if include_own:
            own = default_key_path(settings)
            pub = public_key_path(own)
            if pub.is_file():
                keys.append(load_public_key(pub))
            elif own.is_file():
                try:
                    keys.append(load_signing_key(settings).public_key())
                except SigningKeyError as exc:
                    # one's own key is an optional trust source: unreadable, it is left out
                    logger.warning("own signing key not trusted: %s", exc.message)
    return {key_id(k): k for k in keys}
