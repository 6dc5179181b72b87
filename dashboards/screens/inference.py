"""The inference page (see dashboards.pages.inference), then capacity per service (dashboards.inference_capacity)."""

import streamlit as st

from dashboards import pages
from dashboards.app import current_view
from dashboards.inference_capacity import capacity_table

view = current_view()
pages.inference(view)
table = capacity_table(view)
if table is not None:
    st.subheader(view.tx.fmt.term("indicator", "capacity_headroom"))
    st.dataframe(table, hide_index=True, width="stretch")
