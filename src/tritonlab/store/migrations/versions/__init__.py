"""The classroom database's schema revisions, one module per revision (`NNNN_what.py`), applied in order by
Alembic through `store.database.upgrade`. A revision never imports the code it migrates for.
"""
