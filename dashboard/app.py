"""bsvm dashboard entry point: streamlit run dashboard/app.py"""

import streamlit as st

st.set_page_config(page_title="bsvm explorer", layout="wide")
st.title("bsvm: the Bayesian SVM explorer")
st.info("The dashboard is being built. Meanwhile, use the estimators from Python: see the README.")
