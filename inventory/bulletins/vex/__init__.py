"""VEX per cluster: what the imported bulletins mean for each GPU node's components, as OpenVEX
and CSAF 2.0 VEX documents (statements.py, openvex.py and csaf.py are PURE; selectors.py reads
the inventory; api.py and views.py serve them)."""
