"""CSAF 2.0 advisories: parse (document), version order (versions), NVIDIA products (products),
affected -> fixed pairs (fixes). Pure: no Django, no network."""
