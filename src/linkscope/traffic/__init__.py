"""linkscope.traffic"""
