"""Each GPU vendor's small pure pieces (ground layer: they import nothing of linkscope above errors):
the device runtime's traits, the kernel dialect, and the words a vendor's messages use. The
platform table (``platforms.py``) holds them in its rows; callers ask the row, never the vendor's
name. Pieces that need a higher layer (discovery, counters, engines, launch placement) live in the
vendor's own modules there and the row names them by ``"module:attribute"``."""
