"""linkscope.engines"""
