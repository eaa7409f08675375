"""The bsvm Streamlit dashboard (``streamlit run dashboard/app.py``)."""
