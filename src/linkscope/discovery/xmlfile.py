"""Users' XML files (hwloc ``lstopo --of xml``, NCCL ``NCCL_TOPO_DUMP_FILE``), parsed safely.

Parsing goes through defusedxml: entity declarations (the "billion laughs" expansion) and external
entities or DTDs are refused, never expanded or fetched. The DOCTYPE line hwloc writes
(``<!DOCTYPE topology SYSTEM "hwloc2.dtd">``) names a DTD that is not read. Every failure is one
``UserError`` line naming the file and what is wrong.

Bounded before the work: a file over ``MAX_XML_BYTES`` is refused from its size; while parsing,
nesting deeper than ``MAX_XML_DEPTH``, more than ``MAX_XML_ELEMENTS`` elements, or more GPUs than a
synthetic node may have (``topology.synthetic.MAX_SYNTHETIC_GPUS``) stop the parser at that
element, so neither the tree nor the readers' walks over it (which recurse) grow without bound.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn
from xml.etree.ElementTree import Element, ParseError

from ..errors import UserError
from ..userfiles import open_regular, read_text

HWLOC = "hwloc"
NCCL = "nccl"

MAX_XML_BYTES = 64 * 2**20
"""Largest topology XML read: lstopo's XML of a 2-socket, 8-GPU node is a few hundred KiB."""
MAX_XML_DEPTH = 64
"""Deepest element nesting: hwloc nests Machine > Package > caches > Core > PU and PCI bridges
(about 20 levels on large nodes); NCCL's system > cpu > pci... > gpu > nvlink about 10."""
MAX_XML_ELEMENTS = 200_000
"""Most elements: a 2-socket, 256-thread node with its PCI tree is a few thousand."""


class _TooLarge(ValueError):
    pass


def _is_gpu(tag: str, attrs: dict[str, str]) -> bool:
    """NCCL's ``<gpu>``, or an hwloc PCI device of class 03xx (display) / 12xx (accelerator)."""
    if tag == "gpu":
        return True
    return tag == "object" and attrs.get("type") == "PCIDev" and attrs.get("pci_type", "").lstrip()[:2] in ("03", "12")


def _bounded_builder() -> Any:
    """A TreeBuilder that stops the parser at the element past a bound (``_TooLarge``)."""
    from xml.etree.ElementTree import TreeBuilder

    from ..topology.synthetic import MAX_SYNTHETIC_GPUS

    class Bounded(TreeBuilder):
        depth = 0
        elements = 0
        gpus = 0

        def start(self, tag: str, attrs: dict[str, str]) -> Element:
            self.depth += 1
            self.elements += 1
            if self.depth > MAX_XML_DEPTH:
                raise _TooLarge(f"elements nested more than {MAX_XML_DEPTH} deep")
            if self.elements > MAX_XML_ELEMENTS:
                raise _TooLarge(f"more than {MAX_XML_ELEMENTS:,} elements")
            if _is_gpu(tag, attrs):
                self.gpus += 1
                if self.gpus > MAX_SYNTHETIC_GPUS:
                    raise _TooLarge(f"more than {MAX_SYNTHETIC_GPUS} GPUs (the most one node may have, as for "
                                    "synthetic topologies)")
            return super().start(tag, attrs)

        def end(self, tag: str) -> Element:
            self.depth -= 1
            return super().end(tag)

    return Bounded()


class _EntityRefused(ValueError):
    pass


def _stdlib_fromstring(text: str) -> Element:
    """The same refusals as defusedxml, on the standard library's expat parser: used only where
    defusedxml is not installed (a GPU machine without internet)."""
    from xml.parsers import expat

    def refuse(*_args: object) -> NoReturn:
        raise _EntityRefused("entity declaration or external reference")

    builder = _bounded_builder()
    parser = expat.ParserCreate()
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        error = ParseError(expat.ErrorString(exc.code))
        error.position = (exc.lineno, exc.offset)
        raise error from None
    return builder.close()


def parse(text: str, origin: str) -> Element:
    """The root element of ``text``; UserError for XML that is malformed or declares entities."""
    try:
        import defusedxml.ElementTree as safe_et
        from defusedxml import DefusedXmlException
    except ImportError:  # pragma: no cover - exercised by a test that hides defusedxml
        safe_et, DefusedXmlException = None, _EntityRefused
    try:
        if safe_et is None:
            return _stdlib_fromstring(text)
        parser = safe_et.DefusedXMLParser(target=_bounded_builder(), forbid_dtd=False, forbid_entities=True,
                                          forbid_external=True)
        parser.feed(text)
        return parser.close()
    except _TooLarge as exc:
        raise UserError(f"{origin}: refused before reading further: {exc}") from None
    except (DefusedXmlException, _EntityRefused) as exc:
        raise UserError(f"{origin}: XML entity or external reference refused ({type(exc).__name__}); "
                        "topology files must not declare entities") from None
    except ParseError as exc:
        line, column = getattr(exc, "position", (0, 0))
        reason = str(exc).split(":")[0]
        raise UserError(f"{origin} is not well-formed XML: {reason} (line {line}, column {column})") from None
    except (ValueError, RecursionError) as exc:  # expat refuses some byte/str mixes; absurd nesting
        raise UserError(f"{origin} is not readable XML: {type(exc).__name__}") from None


def kind_of(root: Element) -> str:
    """``hwloc`` for ``<topology>``, ``nccl`` for ``<system>``; UserError naming the root otherwise."""
    if root.tag == "topology":
        return HWLOC
    if root.tag == "system":
        return NCCL
    raise UserError(f"XML root element <{root.tag[:40]}> is neither hwloc's <topology> nor NCCL's <system>",
                    hint="expected the output of 'lstopo --of xml' or a file NCCL wrote through NCCL_TOPO_DUMP_FILE")


def looks_like_xml(path: Path) -> bool:
    """True for a ``.xml`` name or a file whose first non-blank character is ``<``."""
    if path.suffix.lower() == ".xml":
        return True
    try:
        with open_regular(path, "topology file", max_bytes=MAX_XML_BYTES) as handle:
            head = handle.read(256).lstrip(b"\xef\xbb\xbf \t\r\n")
    except (OSError, UserError):  # the reader names what is wrong with it
        return False
    return head.startswith(b"<")


def load(path: str | Path) -> Any:
    """The Topology an hwloc or NCCL XML file describes (``is_this_system`` False)."""
    path = Path(path)
    text = read_text(path, "topology file", max_bytes=MAX_XML_BYTES)
    root = parse(text, str(path))
    kind = kind_of(root)
    if kind == HWLOC:
        from .hwloc_xml import topology_from_xml

        return topology_from_xml(root, origin=str(path))
    from .nccl_xml import topology_from_xml as from_nccl

    return from_nccl(root, origin=str(path))


def attr_int(element: Element, key: str, origin: str, *, default: int | None = None, base: int = 10) -> int | None:
    """An integer attribute (``0x`` prefix allowed); UserError naming element and attribute when bad."""
    text = element.get(key)
    if text is None or text.strip() == "":
        return default
    try:
        return int(text.strip(), 0 if text.strip().lower().startswith("0x") else base)
    except ValueError:
        raise UserError(f"{origin}: <{element.tag}> attribute {key}={text[:40]!r} is not an integer") from None


def attr_float(element: Element, key: str, origin: str) -> float | None:
    text = element.get(key)
    if text is None or text.strip() == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{origin}: <{element.tag}> attribute {key}={text[:40]!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise UserError(f"{origin}: <{element.tag}> attribute {key}={text[:40]!r} is not a finite number")
    return value
