"""Construction layer: ontology -> crawl -> filter -> generate -> assemble -> validate -> export.

Reads and writes only through :mod:`memlens.core`; never imports :mod:`memlens.eval`."""
