"""linkscope.comm"""
