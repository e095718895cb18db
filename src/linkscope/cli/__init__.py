"""linkscope.cli"""
